/* A randomized multi-threaded workout of the whole allocator (prefixed
 * build): every block carries a fill pattern that is verified before it is
 * freed, blocks move between threads through a shared exchange (remote
 * frees), and threads are created and joined in waves (heap abandonment and
 * adoption).  Fails on any corrupted content, misalignment or overlap the
 * patterns reveal. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "testlib.h"
#include "vigil.h"

#define SLOTS 512
#define XCHG 256
#define THREADS 4
#define WAVES 6
#define OPS 60000 /* per thread and wave; UNIT_THREADS_OPS=N overrides */

struct blk {
  uint8_t *p;
  size_t n;
  uint8_t tag;
};
static struct blk xchg[XCHG];
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int bad;
static int ops = OPS;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static size_t pick_size(uint64_t *s) {
  switch (rnd(s) % 16) {
    case 0: return rnd(s) % (300 << 10);   /* spans and large */
    case 1: case 2: return rnd(s) % 65537; /* every small class */
    default: return rnd(s) % 512;
  }
}

static void fill(struct blk *b) {
  if (b->n) memset(b->p, b->tag, b->n);
}
static void verify_and_free(struct blk *b) {
  for (size_t i = 0; i < b->n; i++)
    if (b->p[i] != b->tag) {
      bad = 1;
      fprintf(stderr, "corrupt block %p size %zu at %zu\n", (void *)b->p, b->n, i);
      break;
    }
  vigil_free(b->p);
  b->p = NULL;
}

static void *worker(void *arg) {
  uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  struct blk mine[SLOTS] = {0};
  for (int op = 0; op < ops; op++) {
    struct blk *b = &mine[rnd(&s) % SLOTS];
    unsigned what = (unsigned)(rnd(&s) % 10);
    if (b->p && what < 4) {
      verify_and_free(b);
    } else if (b->p && what < 6) {
      /* Hand it to whoever comes next: a remote free for someone. */
      struct blk *x = &xchg[rnd(&s) % XCHG];
      pthread_mutex_lock(&xlock);
      struct blk old = *x;
      *x = *b;
      pthread_mutex_unlock(&xlock);
      *b = old;
    } else if (b->p && what < 7) {
      size_t n = pick_size(&s);
      uint8_t *q = vigil_realloc(b->p, n ? n : 1);
      if (q == NULL) { bad = 1; break; }
      size_t keep = b->n < n ? b->n : n;
      for (size_t i = 0; i < keep; i++)
        if (q[i] != b->tag) { bad = 1; fprintf(stderr, "realloc lost contents\n"); break; }
      b->p = q;
      b->n = n ? n : 1;
      fill(b);
    } else if (!b->p) {
      b->n = pick_size(&s);
      b->tag = (uint8_t)rnd(&s);
      unsigned kind = (unsigned)(rnd(&s) % 8);
      size_t align = (size_t)1 << (rnd(&s) % 14);
      if (kind == 0) {
        b->p = vigil_calloc(1, b->n);
        for (size_t i = 0; b->p && i < b->n; i++)
          if (b->p[i]) { bad = 1; fprintf(stderr, "calloc not zero\n"); break; }
      } else if (kind == 1) {
        b->p = vigil_memalign(align, b->n);
        if (b->p && (uintptr_t)b->p % align) { bad = 1; fprintf(stderr, "misaligned\n"); }
      } else {
        b->p = vigil_malloc(b->n);
      }
      if (b->p == NULL) { bad = 1; fprintf(stderr, "allocation of %zu failed\n", b->n); break; }
      if ((uintptr_t)b->p % 16) { bad = 1; fprintf(stderr, "not 16-aligned\n"); }
      fill(b);
    }
  }
  for (int i = 0; i < SLOTS; i++)
    if (mine[i].p) verify_and_free(&mine[i]);
  return NULL;
}

int main(void) {
  /* helgrind and drd check every access against every thread's history:
   * ci/valgrind-check.sh runs a shorter workout (README, Valgrind). */
  const char *n = getenv("UNIT_THREADS_OPS");
  if (n) {
    char *end;
    long v = strtol(n, &end, 10);
    if (*n && !*end && v > 0 && v <= OPS) ops = (int)v;
    else fprintf(stderr, "unit_threads: UNIT_THREADS_OPS=%s is not 1..%d; running %d\n", n, OPS, OPS);
  }
  for (int w = 0; w < WAVES; w++) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(w * THREADS + i + 1));
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  }
  for (int i = 0; i < XCHG; i++)
    if (xchg[i].p) verify_and_free(&xchg[i]);
  CHECK(!bad, "see messages above");
  struct mallinfo2 mi = vigil_mallinfo2();
  CHECK(mi.uordblks == 0, "in-use bytes after freeing everything: %zu", mi.uordblks);
  CHECK(mi.hblks == 0, "large blocks after freeing everything: %zu", mi.hblks);
  return test_done("unit_threads");
}
