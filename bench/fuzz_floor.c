/* The physical floor of a fuzz input on this machine (bench/fuzz_bench.py):
 * what a fork that the parent waits for, a thread that it joins, one
 * system call, and a page fault on fresh anonymous memory (with its share
 * of the munmap that gives the page back) cost, each the median of many;
 * and what the programs' fills and checks cost a KiB of memory that is
 * already mapped in: the oracle's memset, and its memcmp of a block against
 * itself a byte on (diff/model.c), over a block of 1 MiB, the most one fill
 * writes (MODEL_CHECK_MAX in diff/model.h).  Prints one line:
 *   fork_wait_us=F thread_us=T syscall_ns=S fault_ns=P fill_ns_kib=W check_ns_kib=C */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

static void *nothing(void *arg) { return arg; }

int main(void) {
  enum { N = 301, CALLS = 10000, PAGES = 64, BLOCK = 1 << 20 };
  static double fork_ns[N], thread_ns[N], call_ns[N], fault_ns[N], fill_ns[N], check_ns[N];
  static unsigned char block[BLOCK];
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < N; i++) {
    double t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
    }
    double t1 = now_ns();
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) != 0) {
      perror("pthread_create");
      return 1;
    }
    pthread_join(t, NULL);
    double t2 = now_ns();
    for (int k = 0; k < CALLS; k++) syscall(SYS_getppid);
    double t3 = now_ns();
    volatile char *m = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      perror("mmap");
      return 1;
    }
    double t4 = now_ns();
    for (size_t k = 0; k < PAGES; k++) m[k * page] = 1;
    munmap((void *)m, PAGES * page);
    double t5 = now_ns();
    fault_ns[i] = (t5 - t4) / PAGES;
    fork_ns[i] = t1 - t0;
    thread_ns[i] = t2 - t1;
    call_ns[i] = (t3 - t2) / CALLS;
  }
  /* Apart from the forks, which leave the block's pages copy-on-write. */
  memset(block, 0x5a, sizeof block);
  for (int i = 0; i < N; i++) {
    double f0 = now_ns();
    memset(block, i & 0xff, sizeof block);
    __asm__ volatile("" : : "r"(block) : "memory"); /* the bytes are wanted */
    double f1 = now_ns();
    int same = memcmp(block, block + 1, sizeof block - 1) == 0;
    __asm__ volatile("" : : "r"(same) : "memory");
    double f2 = now_ns();
    fill_ns[i] = (f1 - f0) / (BLOCK / 1024);
    check_ns[i] = (f2 - f1) / (BLOCK / 1024);
    if (!same) {
      fprintf(stderr, "fuzz_floor: the block does not hold what was written\n");
      return 1;
    }
  }
  printf("fork_wait_us=%.1f thread_us=%.1f syscall_ns=%.0f fault_ns=%.0f fill_ns_kib=%.0f check_ns_kib=%.0f\n",
         median(fork_ns, N) / 1e3, median(thread_ns, N) / 1e3, median(call_ns, N), median(fault_ns, N),
         median(fill_ns, N), median(check_ns, N));
  return 0;
}
