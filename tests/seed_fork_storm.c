/* Seed 000: fork() must not deadlock against threads that hold allocator
 * and stdio locks, and the child must be able to allocate.
 *
 * Part 1, the fork storm: threads run malloc/free, getline (FILE lock ->
 * malloc), fflush(NULL) (stdio list lock -> FILE locks) and open_memstream,
 * while the main thread forks thousands of times.  glibc before 2.24, and
 * allocators that lock everything in a pthread_atfork prepare handler,
 * deadlock here.
 *
 * Part 2: fork() from a signal handler that interrupted malloc or free in
 * another thread's loop; the child allocates inside the handler.
 *
 * Part 3: glibc's tst-mallocfork2 shape: the main thread allocates in a
 * loop while a sender thread interrupts it with SIGUSR1, whose handler
 * forks; another thread allocates all along.  vigil masks no signals
 * around its locks, so the handler may interrupt main inside a critical
 * section: fork must skip the locks main itself holds, not wait for them.
 *
 * A hang is a failure: every child arms alarm(), and the parent re-arms a
 * 30 s alarm before each fork.  Checked: without the stdio list lock in the
 * prepare handler (fork.c), part 1 deadlocks within seconds. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

static atomic_int stop;
static atomic_int started; /* mallocers that have made their heap */
static char path[] = "/tmp/vigil-fork-XXXXXX";

static void *mallocer(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg;
  void *keep[64] = {0};
  free(malloc(1));
  started++;
  while (!stop) {
    s = s * 1103515245u + 12345u;
    unsigned i = (s >> 8) % 64;
    free(keep[i]);
    /* Mostly small; some spans and large blocks to hold arena and large locks. */
    size_t n = (s >> 16) % 16 == 0 ? (size_t)((s >> 4) % (400 << 10)) : (size_t)((s >> 4) % 2048);
    keep[i] = malloc(n);
  }
  for (int i = 0; i < 64; i++) free(keep[i]);
  return NULL;
}

static void *getliner(void *arg) {
  (void)arg;
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  while (!stop) {
    char *line = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, f) < 0) rewind(f);
    free(line); /* so the next getline allocates again, under the FILE lock */
    usleep(20); /* leave the forker a chance at the stdio locks: they are not fair */
  }
  fclose(f);
  return NULL;
}

static void *flusher(void *arg) {
  (void)arg;
  while (!stop) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
      fprintf(m, "%d %s\n", 42, "memstream");
      fflush(NULL); /* list lock, then every FILE's lock */
      fclose(m);
      free(buf);
    }
    usleep(20);
  }
  return NULL;
}

/* The child: allocate, touch, free; then leave without running atexit. */
static int child_work(void) {
  alarm(10);
  for (int i = 1; i < 200; i++) {
    char *p = malloc((size_t)i * 37);
    if (!p) return 2;
    memset(p, i, (size_t)i * 37);
    free(p);
  }
  char *big = malloc(1 << 20);
  if (!big) return 3;
  big[12345] = 1;
  free(big);
  FILE *m = tmpfile(); /* stdio in the child too */
  if (m) {
    fprintf(m, "child\n");
    fclose(m);
  }
  return 0;
}

static int wait_child(pid_t pid, const char *what, int iter) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  CHECK(0, "%s %d: child %s %d", what, iter, WIFSIGNALED(st) ? "killed by signal" : "exited with",
        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  return 1;
}

static void fork_storm(int forks) {
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "mkstemp");
  FILE *f = fdopen(fd, "w");
  /* Long lines make getline grow its buffer into spans and large blocks,
   * whose allocation takes an allocator lock while the FILE lock is held. */
  for (int i = 0; i < 400; i++) fprintf(f, "line %d %0*d\n", i, i % 16 == 0 ? 70000 + (i % 5) * 20000 : i, 7);
  fclose(f);

  pthread_t t[5];
  pthread_create(&t[0], NULL, mallocer, (void *)1);
  pthread_create(&t[1], NULL, mallocer, (void *)2);
  pthread_create(&t[2], NULL, getliner, NULL);
  pthread_create(&t[3], NULL, flusher, NULL);
  pthread_create(&t[4], NULL, getliner, NULL);
  int failures = 0;
  double fork_total = 0, fork_max = 0, wait_total = 0;
  for (int i = 0; i < forks && failures < 5; i++) {
    alarm(30); /* a fork (or child) that takes this long is a deadlock */
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) _exit(child_work());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    failures += wait_child(pid, "fork storm", i);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    double f = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    fork_total += f;
    fork_max = f > fork_max ? f : fork_max;
    wait_total += (double)(t2.tv_sec - t1.tv_sec) + (double)(t2.tv_nsec - t1.tv_nsec) * 1e-9;
  }
  printf("fork storm: %d forks, fork() total %.2f s (max %.3f s), children total %.2f s\n", forks, fork_total,
         fork_max, wait_total);
  stop = 1;
  for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
  unlink(path);
  CHECK(failures == 0, "%d failed children", failures);
}

/* ---- part 2: fork from a signal handler ---- */
static sem_t handled;
static atomic_int handler_failures;

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    void *p = malloc(100), *q = malloc(70000);
    _exit(p && q ? 0 : 1);
  }
  int st = 0;
  if (pid < 0) handler_failures++;
  else {
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) handler_failures++;
  }
  errno = saved;
  sem_post(&handled);
}

static void fork_in_handler(int signals) {
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sem_init(&handled, 0, 0);
  stop = 0;
  started = 0;
  pthread_t w;
  pthread_create(&w, NULL, mallocer, (void *)3);
  /* Signals interrupt malloc and free, not the thread's start: a child
   * forked while w held the heap-pool lock (making its heap) could not
   * make a heap of its own (README, known limits). */
  while (started < 1) usleep(100);
  for (int i = 0; i < signals; i++) {
    alarm(30);
    pthread_kill(w, SIGUSR1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    int r;
    while ((r = sem_timedwait(&handled, &ts)) < 0 && errno == EINTR) {
    }
    if (r != 0) {
      CHECK(0, "signal %d: handler did not finish within 20 s (deadlock)", i);
      _exit(1);
    }
  }
  stop = 1;
  pthread_join(w, NULL);
  CHECK(handler_failures == 0, "%d children of the handler failed", (int)handler_failures);
}

/* ---- part 3: tst-mallocfork2 ---- */
static atomic_int sent, received;
static pthread_t main_thread;

static void on_usr1_main(int sig) {
  (void)sig;
  int saved = errno;
  pid_t pid = fork();
  if (pid == 0) _exit(0); /* as glibc's test: the child only has to exist */
  if (pid < 0) handler_failures++;
  else {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) handler_failures++;
  }
  received++;
  errno = saved;
}

static void *sender(void *arg) {
  int signals = (int)(intptr_t)arg;
  for (int i = 0; i < signals && !stop; i++) {
    int before = received;
    sent++;
    pthread_kill(main_thread, SIGUSR1);
    /* One signal in flight at a time, so none is merged away. */
    for (int w = 0; received == before && w < 200000; w++) usleep(100);
  }
  return NULL;
}

static void mallocfork2(int signals) {
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1_main;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  handler_failures = 0;
  stop = 0;
  main_thread = pthread_self();
  pthread_t other, snd;
  pthread_create(&other, NULL, mallocer, (void *)4);
  pthread_create(&snd, NULL, sender, (void *)(intptr_t)signals);
  /* Sizes reach every path: small classes, spans and large blocks. */
  static const size_t sizes[] = {8, 100, 4000, 40000, 100 << 10, 300 << 10, 2 << 20};
  void *keep[16] = {0};
  unsigned s = 7;
  alarm(60);
  while (received < signals) {
    s = s * 1103515245u + 12345u;
    unsigned i = (s >> 8) % 16;
    free(keep[i]);
    keep[i] = malloc(sizes[(s >> 16) % 7]);
  }
  alarm(0);
  stop = 1;
  pthread_join(snd, NULL);
  pthread_join(other, NULL);
  for (int i = 0; i < 16; i++) free(keep[i]);
  printf("tst-mallocfork2 shape: %d signals, %d forks from the main thread's handler\n", (int)sent, (int)received);
  CHECK(received == signals, "%d of %d signals handled", (int)received, signals);
  CHECK(handler_failures == 0, "%d forks in the handler failed", (int)handler_failures);
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 3000;
  fork_storm(forks);
  fork_in_handler(forks / 3);
  mallocfork2(forks / 3);
  return test_done("seed_fork_storm");
}
