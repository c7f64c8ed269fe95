/* A workload for tests/cost_warm.sh: once warm, the small and medium paths
 * (blocks up to 64 KiB, and spans of 64 KiB to 3.5 MiB, with realloc and
 * frees from another thread) must make no system call at all.
 *
 * It runs the same deterministic round several times; the last one runs
 * between two getppid() calls, which the script finds in strace's output.
 * Everything between them is a syscall the allocator made on a warm path.
 * Another thread frees a share of the blocks (remote frees) through a
 * spinning hand-off, so no futex is the harness's own.  Uses only the standard
 * malloc API: the script preloads the allocator under test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SMALL 2000
#define MEDIUM 32
#define RING 1

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *ring[RING]; /* waits use sched_yield, which the script leaves out */
static _Atomic size_t head, tail;
static _Atomic int done;

static void *remote_freer(void *arg) {
  (void)arg;
  size_t t = 0;
  for (;;) {
    if (atomic_load_explicit(&head, memory_order_acquire) == t) {
      if (atomic_load_explicit(&done, memory_order_acquire)) return NULL;
      sched_yield(); /* the harness's own syscall: cost_warm.sh does not trace it */
      continue;
    }
    free(ring[t % RING]);
    atomic_store_explicit(&tail, ++t, memory_order_release);
  }
}

/* Synchronous: the other thread has freed p when this returns, so every run
 * makes the same calls in the same order and meets the same heap layout
 * (a test that passes or fails the same way every time). */
static void hand_off(void *p) {
  size_t h = atomic_load_explicit(&head, memory_order_relaxed);
  ring[h % RING] = p;
  atomic_store_explicit(&head, h + 1, memory_order_release);
  while (atomic_load_explicit(&tail, memory_order_acquire) != h + 1) sched_yield();
}

static char *small[SMALL], *medium[MEDIUM];
static size_t mlen[MEDIUM];

static void fail(const char *what) {
  fprintf(stderr, "cost_warm: %s\n", what);
  exit(1);
}

static void round_once(void) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int op = 0; op < 40000; op++) {
    uint64_t r = rnd(&s);
    unsigned i = (unsigned)(r % SMALL);
    size_t n = (size_t)8 << ((r >> 16) % 13); /* 8 B .. 32 KiB */
    n += (r >> 32) % n;
    if (small[i]) {
      if ((r >> 40) % 4 == 0) hand_off(small[i]);
      else free(small[i]);
    }
    if (!(small[i] = malloc(n))) fail("malloc");
    small[i][0] = small[i][n - 1] = 1;
  }
  for (int op = 0; op < 600; op++) {
    uint64_t r = rnd(&s);
    unsigned i = (unsigned)(r % MEDIUM);
    size_t n = ((size_t)64 << 10) + (r >> 20) % (((size_t)3 << 20) + (512 << 10) - (64 << 10));
    if (medium[i] && (r >> 8) % 3 == 0) {
      char *q = realloc(medium[i], n);
      if (!q) fail("realloc");
      medium[i] = q;
    } else {
      free(medium[i]);
      if (!(medium[i] = malloc(n))) fail("malloc");
    }
    mlen[i] = n;
    medium[i][0] = medium[i][n / 2] = medium[i][n - 1] = 2;
  }
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 4;
  pthread_t t;
  if (pthread_create(&t, NULL, remote_freer, NULL)) fail("pthread_create");
  for (int r = 1; r < rounds; r++) round_once();
  syscall(SYS_getppid); /* marker: the warm round starts */
  round_once();
  syscall(SYS_getppid); /* marker: it ended */
  atomic_store_explicit(&done, 1, memory_order_release);
  pthread_join(t, NULL);
  for (int i = 0; i < SMALL; i++) free(small[i]);
  for (int i = 0; i < MEDIUM; i++) free(medium[i]);
  printf("cost_warm: %d rounds\n", rounds);
  return 0;
}
