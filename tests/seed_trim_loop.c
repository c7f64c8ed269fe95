/* Seed 000, BZ 17195: glibc's per-thread heaps ignored the trim threshold
 * and called madvise on every free, about 4x slower.  vigil has one decommit
 * policy for all memory: an alloc/free loop costs O(1) madvise/munmap calls,
 * not O(iterations).  Time-based decay may add one purge per decay_ms, so
 * the bound allows elapsed/decay_ms more; iterations do not enter it.
 * Loops run in a non-main thread (where glibc's bug was) and in main, with
 * one fixed size per loop and with mixed sizes; then BZ 17195's mixed
 * shape in rounds (blocks of i % 58 + 1 pages, touched, half freed at once,
 * then the rest), whose count must not grow with the rounds: a threshold
 * that never learns the working set purges and remaps it every round. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "testlib.h"

static unsigned long syscalls(void) {
  return load_relaxed(&vg_os_counts.madvise) + load_relaxed(&vg_os_counts.unmap) + load_relaxed(&vg_os_counts.map);
}
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct loop {
  const char *name;
  size_t sizes[6];
  int nsizes;
};
static const struct loop loops[] = {
    {"32 KiB (small class)", {32 << 10}, 1},
    {"100 KiB (span)", {100 << 10}, 1},
    {"300 KiB (mapped, then span)", {300 << 10}, 1},
    {"3 MiB (mapped)", {3 << 20}, 1},
    {"mixed", {5000, (64 << 10) + 1, 100 << 10, 300 << 10, 700 << 10, 2 << 20}, 6},
};

/* Runs `iters` rounds of malloc/touch/free; returns the syscalls it made. */
static unsigned long run(const struct loop *l, int iters, double *secs) {
  unsigned long s0 = syscalls();
  double t0 = now();
  for (int i = 0; i < iters; i++) {
    size_t n = l->sizes[i % l->nsizes];
    char *p = malloc(n);
    if (!p) return ~0ul;
    p[0] = p[n / 2] = p[n - 1] = (char)i;
    free(p);
  }
  *secs = now() - t0;
  return syscalls() - s0;
}

static void check_loops(const char *where) {
  double decay_s = (double)vg_option(OPT_decay_ms) / 1000.0;
  for (size_t k = 0; k < sizeof loops / sizeof loops[0]; k++) {
    double t;
    run(&loops[k], 50, &t); /* warm-up: the thresholds settle */
    unsigned long c = run(&loops[k], 20000, &t);
    unsigned long bound = 6 + (unsigned long)(t / (decay_s > 0 ? decay_s : 1e-3)) * 2;
    printf("%s, %s: %lu madvise/munmap/mmap calls in 20000 rounds (%.2f s, bound %lu)\n", where, loops[k].name, c,
           t, bound);
    CHECK(c <= bound, "%s, %s: %lu syscalls for 20000 rounds (bound %lu)", where, loops[k].name, c, bound);
  }
}

/* One round of the mixed shape. */
static void mixed_round(void) {
  enum { N = 116 };
  static char *blocks[N];
  size_t ps = 4096;
  for (int i = 0; i < N; i++) {
    size_t n = (size_t)(i % 58 + 1) * ps;
    blocks[i] = malloc(n);
    REQUIRE(blocks[i], "malloc(%zu)", n);
    for (size_t k = 0; k < n; k += ps) blocks[i][k] = (char)i;
  }
  for (int i = 0; i < N; i += 2) free(blocks[i]);
  for (int i = 1; i < N; i += 2) free(blocks[i]);
}

static void check_rounds(const char *where) {
  double decay_s = (double)vg_option(OPT_decay_ms) / 1000.0;
  for (int r = 0; r < 2; r++) mixed_round(); /* warm-up: thresholds learn */
  unsigned long s0 = syscalls();
  double t0 = now();
  for (int r = 2; r < 20; r++) mixed_round();
  double t = now() - t0;
  unsigned long c = syscalls() - s0;
  /* A decay purge may return the free pages once per decay_ms, and the
   * next round maps them back. */
  unsigned long bound = 8 + (unsigned long)(t / (decay_s > 0 ? decay_s : 1e-3)) * 40;
  printf("%s, mixed i %% 58 pages in rounds: %lu madvise/munmap/mmap calls in rounds 3-20 (%.3f s, bound %lu)\n", where,
         c, t, bound);
  CHECK(c <= bound, "%s, mixed rounds: %lu syscalls in 18 rounds (bound %lu)", where, c, bound);
}

static void *in_thread(void *arg) {
  (void)arg;
  check_loops("thread");
  check_rounds("thread");
  return NULL;
}

int main(void) {
  free(malloc(1)); /* initialise */
  pthread_t t;
  pthread_create(&t, NULL, in_thread, NULL);
  pthread_join(t, NULL);
  check_loops("main");
  check_rounds("main");
  return test_done("seed_trim_loop");
}
