/* Seed 003 (page sizes): glibc once mistook mmapped chunks for tcache chunks
 * when the page size was not the one it was tuned for.  vigil's property:
 * a large block (own mapping, >= mmap threshold) is known by its entry in the
 * large table (src/large.c), never by an in-band header, and never enters a
 * thread heap; thread heaps hold only small-class pages.  This must hold on
 * 4K, 16K and 64K pages alike, since vigil reads the page size at run time.
 *
 * Checks, all against the page size the process really runs with:
 *   1. blocks at and around the mmap threshold: large ones are page-aligned,
 *      sit right after a guard page and right before another, and have
 *      request <= usable < request + 2 pages; smaller ones are not large;
 *   2. freed large blocks (kept mapped in vigil's large cache) are never handed
 *      out again by a storm of small allocations, in this thread or another;
 *   3. small blocks never report a usable size above 64 KiB;
 *   4. memalign/valloc/pvalloc with page-size alignments, small to large;
 *   5. realloc of a large block up and down keeps the contents (mremap moves
 *      pages at the run-time page granularity);
 *   6. mallinfo2().hblks / hblkhd count live large blocks exactly.
 *
 * Built two ways: by tests.mk's seed_% rule (libvigil.a, standard names) and
 * by qemu-targets/qemu.mk (-DVIGIL_PREFIX, cross-compiled, run by
 * `make qemu-check` at each target's page sizes, e.g. qemu-aarch64 -p
 * 4096/16384/65536).  Every call goes through VIGIL_NAME().  The first line
 * of output is "page size: N" (qemu-targets/run.sh asserts it). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "testlib.h"

#define MALLOC VIGIL_NAME(malloc)
#define FREE VIGIL_NAME(free)
#define REALLOC VIGIL_NAME(realloc)
#define MEMALIGN VIGIL_NAME(memalign)
#define VALLOC VIGIL_NAME(valloc)
#define PVALLOC VIGIL_NAME(pvalloc)
#define USABLE VIGIL_NAME(malloc_usable_size)
#define MALLINFO2 VIGIL_NAME(mallinfo2)
#define MALLOPT VIGIL_NAME(mallopt)
#define TRIM VIGIL_NAME(malloc_trim)

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static size_t ps;        /* sysconf(_SC_PAGESIZE) */
static size_t threshold; /* mmap threshold when the test started */

static size_t hblks(void) { return MALLINFO2().hblks; }
static size_t hblkhd(void) { return MALLINFO2().hblkhd; }

#define readable tl_readable /* testlib.h */

/* ---- fill pattern: every 8-byte word depends on its offset, so a page moved
 * to the wrong place (or lost) shows up. --------------------------------------- */
static inline unsigned char pat(size_t i, unsigned salt) {
  uint64_t w = ((uint64_t)(i >> 3) + salt) * 0x9E3779B97F4A7C15ull;
  w ^= w >> 29;
  return (unsigned char)(w >> ((i & 7) * 8));
}

static void fill(unsigned char *p, size_t from, size_t to, unsigned salt) {
  for (size_t i = from; i < to; i++) p[i] = pat(i, salt);
}

/* Returns the first bad offset, or SIZE_MAX. */
static size_t verify(const unsigned char *p, size_t from, size_t to, unsigned salt) {
  for (size_t i = from; i < to; i++)
    if (p[i] != pat(i, salt)) return i;
  return SIZE_MAX;
}

/* The layout every large block must have, whatever the page size. */
static void check_large_layout_from(const char *what, size_t n, size_t bound_from, unsigned char *p) {
  size_t u = USABLE(p);
  CHECK((uintptr_t)p % ps == 0, "%s: large block of %zu at %p not aligned to the %zu-byte page", what, n, (void *)p,
        ps);
  CHECK(u >= n, "%s: large block of %zu has usable %zu", what, n, u);
  CHECK(u < bound_from + 2 * ps, "%s: large block of %zu has usable %zu (>= %zu + 2 pages of %zu)", what, n, u,
        bound_from, ps);
  CHECK(readable(p) && readable(p + u - 1), "%s: large block of %zu at %p not readable end to end", what, n,
        (void *)p);
  /* Both guards are at least one whole page: probe their near and far ends. */
  CHECK(!readable(p - 1) && !readable(p - ps), "%s: no full guard page before the large block of %zu at %p", what,
        n, (void *)p);
  CHECK(!readable(p + u) && !readable(p + u + ps - 1),
        "%s: no full guard page after the large block of %zu at %p (usable %zu)", what, n, (void *)p, u);
}
/* A block reused from the large cache may be up to four times the request
 * (large.c: cache_take), with its guard right after its usable size. */
static void check_large_layout(const char *what, size_t n, unsigned char *p) { check_large_layout_from(what, n, 4 * n, p); }

/* ---- 1. blocks at and around the threshold -------------------------------- */
static void test_threshold_sizes(void) {
  size_t T = threshold;
  size_t sizes[] = {T - 2 * ps, T - ps, T - 1,         T,         T + 1,   T + ps - 1, T + ps,
                    T + ps + 1, T + 2 * ps, T + 4 * ps + 3, 2 * T, MiB, 4 * MiB, 33 * MiB};
  enum { N = sizeof sizes / sizeof sizes[0] };
  unsigned char *blk[N] = {0};
  size_t base = hblks();
  size_t live_large = 0;
  /* All blocks stay live until the end: freeing one moves the dynamic
   * threshold, and this part is about the default one. */
  for (unsigned i = 0; i < N; i++) {
    size_t n = sizes[i];
    if (n == 0 || n > T + 64 * MiB) continue; /* T - 2 pages underflows for tiny thresholds */
    size_t before = hblks();
    unsigned char *p = MALLOC(n);
    REQUIRE(p != NULL, "malloc(%zu) failed", n);
    blk[i] = p;
    size_t u = USABLE(p);
    int large = hblks() == before + 1;
    CHECK(hblks() - before <= 1, "malloc(%zu) moved hblks by %zu", n, hblks() - before);
    CHECK(large == (n >= T), "malloc(%zu) with threshold %zu: large=%d", n, T, large);
    CHECK(u >= n, "malloc(%zu): usable %zu", n, u);
    if (n <= VG_SMALL_MAX) CHECK(u <= VG_SMALL_MAX, "malloc(%zu) small, usable %zu > 64 KiB", n, u);
    if (large) {
      live_large++;
      check_large_layout("threshold", n, p);
    }
    memset(p, 0x40 + (int)i, u);
  }
  CHECK(hblks() == base + live_large, "hblks %zu, expected %zu + %zu", hblks(), base, live_large);
  /* Nothing overlapped anything. */
  for (unsigned i = 0; i < N; i++) {
    if (blk[i] == NULL) continue;
    size_t u = USABLE(blk[i]);
    size_t j = 0;
    while (j < u && blk[i][j] == 0x40 + i) j++;
    CHECK(j == u, "block %u (%zu bytes): byte %zu overwritten", i, sizes[i], j);
  }
  for (unsigned i = 0; i < N; i++) FREE(blk[i]);
  CHECK(hblks() == base, "hblks %zu after freeing, expected %zu", hblks(), base);
  printf("  1. threshold %zu: %zu of the sizes around it were large, layout checked\n", T, live_large);
}

/* ---- 2 and 3. storms of small blocks after large frees ------------------- */
struct range {
  uintptr_t lo, hi;
};
struct storm {
  const struct range *freed;
  unsigned nfreed;
  unsigned seed;
  unsigned overlaps, oversize, undersize, large; /* results */
  size_t blocks;
};

enum { STORM = 8192 };

static void run_storm(struct storm *s) {
  unsigned char *v[STORM];
  size_t hb = hblks();
  unsigned x = s->seed;
  for (unsigned round = 0; round < 3; round++) {
    for (unsigned i = 0; i < STORM; i++) {
      if (round > 0 && (i % 3) != round % 3) continue; /* churn a third per round */
      if (round > 0) FREE(v[i]);
      size_t n;
      if (round == 0 && i < 4096) {
        n = i + 1; /* every size 1..4096 */
      } else {
        x = x * 1103515245u + 12345u;
        n = 1 + (x >> 8) % 4096;
      }
      unsigned char *p = MALLOC(n);
      if (p == NULL) {
        s->undersize++;
        v[i] = NULL;
        continue;
      }
      v[i] = p;
      s->blocks++;
      /* Overlap first (with the request size): should vigil take a freed
       * large block for a small one, usable size below may abort. */
      uintptr_t a = (uintptr_t)p;
      for (unsigned k = 0; k < s->nfreed; k++)
        if (a < s->freed[k].hi && a + n > s->freed[k].lo) {
          if (s->overlaps++ < 5)
            fprintf(stderr, "malloc(%zu) = %p lies inside freed large block [%#lx, %#lx)\n", n, (void *)p,
                    (unsigned long)s->freed[k].lo, (unsigned long)s->freed[k].hi);
        }
      size_t u = USABLE(p);
      if (u < n) s->undersize++;
      if (u > VG_SMALL_MAX) s->oversize++;
      for (unsigned k = 0; k < s->nfreed; k++)
        if (a + n <= s->freed[k].lo && a + u > s->freed[k].lo && s->overlaps++ < 5)
          fprintf(stderr, "small block %p (usable %zu) runs into freed large block at %#lx\n", (void *)p, u,
                  (unsigned long)s->freed[k].lo);
      memset(p, 0xA5, n);
    }
  }
  if (hblks() != hb) s->large++;
  for (unsigned i = 0; i < STORM; i++) FREE(v[i]);
}

static void *storm_thread(void *arg) {
  run_storm(arg);
  return NULL;
}

struct handoff {
  size_t n;
  unsigned char *p;
};
static void *alloc_large_thread(void *arg) {
  struct handoff *h = arg;
  h->p = MALLOC(h->n);
  return NULL;
}

static void test_no_reuse_as_small(void) {
  size_t T = threshold;
  size_t sizes[] = {T, T + ps + 1, 3 * T + 17, MiB, 2 * MiB + 5};
  enum { N = sizeof sizes / sizeof sizes[0] };
  unsigned char *blk[N];
  struct range freed[N];
  unsigned nfreed = 0;
  size_t base = hblks();

  TRIM(0); /* empty the large cache: every cached byte below is ours */
  struct vg_large_stats st0, st;
  vg_large_stats(&st0);
  CHECK(st0.cached == 0, "large cache holds %zu blocks after malloc_trim", st0.cached);

  /* Block 0 comes from another thread (its heap is gone by the free). */
  struct handoff h = {sizes[0], NULL};
  pthread_t t;
  pthread_create(&t, NULL, alloc_large_thread, &h);
  pthread_join(t, NULL);
  blk[0] = h.p;
  for (unsigned i = 1; i < N; i++) blk[i] = MALLOC(sizes[i]);
  for (unsigned i = 0; i < N; i++) {
    REQUIRE(blk[i] != NULL, "malloc(%zu) failed", sizes[i]);
    check_large_layout("pre-free", sizes[i], blk[i]);
    memset(blk[i], 0x5A, sizes[i]);
  }
  CHECK(hblks() == base + N, "hblks %zu, expected %zu", hblks(), base + N);

  size_t cached_bytes = 0, us[N];
  uintptr_t at[N];
  for (unsigned i = 0; i < N; i++) us[i] = USABLE(blk[i]), at[i] = (uintptr_t)blk[i];
  for (unsigned i = 0; i < N; i++) {
    size_t u = us[i];
    struct vg_large_stats b, a;
    vg_large_stats(&b);
    FREE(blk[i]);
    vg_large_stats(&a);
    if (a.cached == b.cached + 1 && a.cached_bytes == b.cached_bytes + u) {
      /* Still mapped, and vigil's: nothing else may be placed there. */
      freed[nfreed++] = (struct range){at[i], at[i] + u};
      cached_bytes += u;
    } else {
      printf("  2. note: freed block of %zu was not cached (unmapped); no overlap check for it\n", sizes[i]);
    }
  }
  CHECK(hblks() == base, "hblks %zu after freeing, expected %zu", hblks(), base);
  CHECK(nfreed > 0 || getenv("VIGIL_OPTIONS") != NULL, "no freed large block stayed in the large cache");

  /* Storm in this thread, then in a fresh thread (a new thread heap). */
  struct storm s1 = {freed, nfreed, 12345, 0, 0, 0, 0, 0};
  run_storm(&s1);
  struct storm s2 = {freed, nfreed, 777, 0, 0, 0, 0, 0};
  pthread_create(&t, NULL, storm_thread, &s2);
  pthread_join(t, NULL);
  struct storm *ss[] = {&s1, &s2};
  for (unsigned k = 0; k < 2; k++) {
    const char *who = k ? "other thread" : "main thread";
    CHECK(ss[k]->overlaps == 0, "%s: %u small blocks inside freed large blocks", who, ss[k]->overlaps);
    CHECK(ss[k]->oversize == 0, "%s: %u small blocks with usable size > 64 KiB", who, ss[k]->oversize);
    CHECK(ss[k]->undersize == 0, "%s: %u small blocks failed or too short", who, ss[k]->undersize);
    CHECK(ss[k]->large == 0, "%s: small allocations changed hblks", who);
  }
  /* The freed blocks are still in the cache, untouched by the storms. */
  vg_large_stats(&st);
  CHECK(st.cached == nfreed && st.cached_bytes == cached_bytes,
        "large cache %zu blocks / %zu bytes after the storms, expected %u / %zu", st.cached, st.cached_bytes, nfreed,
        cached_bytes);

  /* A large block reused from the cache still has the full layout. */
  for (unsigned i = 0; i < N; i++) {
    unsigned char *p = MALLOC(sizes[i]);
    REQUIRE(p != NULL, "malloc(%zu) failed", sizes[i]);
    check_large_layout("from cache", sizes[i], p);
    FREE(p);
  }
  CHECK(hblks() == base, "hblks %zu, expected %zu", hblks(), base);
  printf("  2. %u freed large blocks stayed cached; %zu + %zu small blocks (two threads) never landed in them\n",
         nfreed, s1.blocks, s2.blocks);
}

/* ---- 3. usable size of small blocks --------------------------------------- */
static int small_ok(size_t n) {
  unsigned char *p = MALLOC(n);
  size_t u = p ? USABLE(p) : 0;
  int ok = p != NULL && u >= n && u <= VG_SMALL_MAX;
  if (!ok) fprintf(stderr, "malloc(%zu): %p usable %zu\n", n, (void *)p, u);
  if (p) memset(p, 0x77, n);
  FREE(p);
  return ok;
}

static void test_small_usable(void) {
  size_t base = hblks();
  unsigned bad = 0, checked = 0;
  size_t extra[] = {ps - 1, ps, ps + 1, 2 * ps, 16 * KiB - 1, 16 * KiB, 32 * KiB + 1, 64 * KiB - 1, 64 * KiB};
  for (size_t n = 1; n <= VG_SMALL_MAX; n += n < 4096 ? 1 : 61, checked++) bad += !small_ok(n);
  for (unsigned i = 0; i < sizeof extra / sizeof extra[0]; i++)
    if (extra[i] <= VG_SMALL_MAX) bad += !small_ok(extra[i]), checked++;
  CHECK(bad == 0, "%u of %u small sizes had a bad usable size", bad, checked);
  CHECK(hblks() == base, "small blocks changed hblks: %zu -> %zu", base, hblks());
  printf("  3. %u small sizes up to 64 KiB: usable within [n, 64 KiB]\n", checked);
}

/* ---- 4. page-size alignments -------------------------------------------- */
static void test_memalign(void) {
  size_t T = threshold;
  size_t aligns[] = {ps, 4 * ps};
  size_t sizes[] = {1, 100, 4096, ps / 2 + 1, 32 * KiB, 64 * KiB, 64 * KiB + 1, 100000, T - 1, T, T + 1, MiB + 1,
                    3 * MiB};
  unsigned done = 0;
  for (unsigned a = 0; a < 2; a++) {
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      size_t A = aligns[a], n = sizes[i];
      size_t before = hblks();
      unsigned char *p = MEMALIGN(A, n);
      CHECK(p != NULL, "memalign(%zu, %zu) failed", A, n);
      if (p == NULL) continue;
      size_t u = USABLE(p);
      int large = hblks() == before + 1;
      CHECK((uintptr_t)p % A == 0, "memalign(%zu, %zu) = %p", A, n, (void *)p);
      CHECK(u >= n, "memalign(%zu, %zu): usable %zu", A, n, u);
      CHECK(large == (n >= T), "memalign(%zu, %zu): large=%d, threshold %zu", A, n, large, T);
      if (large) check_large_layout("memalign", n, p);
      memset(p, 0x3C, u);
      FREE(p);
      CHECK(hblks() == before, "memalign(%zu, %zu): hblks %zu after free, expected %zu", A, n, hblks(), before);
      done++;
    }
  }
  unsigned char *v = VALLOC(1), *pv = PVALLOC(1);
  CHECK(v && (uintptr_t)v % ps == 0, "valloc(1) = %p", (void *)v);
  CHECK(pv && (uintptr_t)pv % ps == 0 && USABLE(pv) >= ps, "pvalloc(1) = %p usable %zu", (void *)pv,
        pv ? USABLE(pv) : 0);
  if (pv) memset(pv, 1, ps);
  FREE(v);
  FREE(pv);
  printf("  4. memalign with %zu and %zu: %u cases, plus valloc/pvalloc\n", aligns[0], aligns[1], done);
}

/* ---- 5. realloc of large blocks keeps contents --------------------------- */
static void test_realloc(void) {
  size_t T = threshold;
  size_t steps[] = {MiB,          3 * MiB + 7,  8 * MiB,     5 * MiB, 2 * MiB - 3, 2 * MiB + ps, T + 1, T,
                    T + 5 * ps,   100000,       3000,        300000,  33 * MiB,    4 * MiB + 1,  40000, 6 * MiB};
  unsigned salt = 0xC0FFEE;
  unsigned long remaps0 = load_relaxed(&vg_os_counts.remap);
  unsigned shrunk = 0, moved = 0;
  size_t cur = steps[0];
  unsigned char *p = MALLOC(cur);
  REQUIRE(p != NULL, "malloc(%zu) failed", cur);
  fill(p, 0, cur, salt);
  size_t base = hblks() - 1;
  for (unsigned i = 1; i < sizeof steps / sizeof steps[0]; i++) {
    size_t n = steps[i], old_u = USABLE(p);
    int was_large = hblks() == base + 1;
    uintptr_t from = (uintptr_t)p;
    unsigned char *q = REALLOC(p, n);
    CHECK(q != NULL, "realloc(%zu -> %zu) failed", cur, n);
    if (q == NULL) break;
    /* realloc keeps a block whose usable size fits and wastes at most half
     * (api.c): such a block stays what it was, with its old usable size. */
    int kept = (uintptr_t)q == from && USABLE(q) == old_u;
    size_t keep = cur < n ? cur : n;
    size_t bad = verify(q, 0, keep, salt);
    CHECK(bad == SIZE_MAX, "realloc(%zu -> %zu): byte %zu (page %zu) lost, %#lx -> %p", cur, n, bad, bad / ps,
          (unsigned long)from, (void *)q);
    int large = hblks() == base + 1;
    CHECK(hblks() - base <= 1, "realloc(%zu -> %zu): hblks %zu, base %zu", cur, n, hblks(), base);
    if (kept) {
      CHECK(n <= old_u && large == was_large, "realloc(%zu -> %zu) kept %#lx (usable %zu), large %d -> %d", cur, n,
            (unsigned long)from, old_u, was_large, large);
      if (large) check_large_layout_from("realloc (kept)", n, old_u, q);
    } else if (was_large) {
      /* A large block stays large: it shrinks in place, and grows in place
       * (committing up to an eighth more than asked) or by moving its
       * pages (large.c). */
      size_t more = old_u + old_u / 8;
      CHECK(large, "realloc(%zu -> %zu): a large block stopped being large", cur, n);
      if (large) check_large_layout_from("realloc", n, n > old_u && more > n ? more : n, q);
    } else {
      /* A block that moves to grow gets half as much again (api.c). */
      size_t got = n > old_u && old_u + old_u / 2 > n ? old_u + old_u / 2 : n;
      CHECK(large == (got >= T), "realloc(%zu -> %zu): large=%d, threshold %zu", cur, n, large, T);
      if (large) check_large_layout_from("realloc", n, got, q);
    }
    CHECK(USABLE(q) >= n, "realloc(%zu -> %zu): usable %zu", cur, n, USABLE(q));
    if (n > cur) fill(q, cur, n, salt);
    if ((uintptr_t)q == from && !kept) shrunk += USABLE(q) < old_u;
    else if ((uintptr_t)q != from) moved++;
    p = q;
    cur = n;
  }
  FREE(p);
  unsigned long remaps = load_relaxed(&vg_os_counts.remap) - remaps0;
  CHECK(remaps > 0, "no large realloc went through mremap");
  CHECK(hblks() == base, "hblks %zu after free, expected %zu", hblks(), base);
  printf("  5. realloc through %zu sizes (%lu mremap calls; %u moved, %u shrunk in place): "
         "contents kept\n", sizeof steps / sizeof steps[0], remaps, moved, shrunk);
}

/* ---- 6. mallinfo2 counts live large blocks exactly ----------------------- */
static void test_hblks(void) {
  size_t T = threshold;
  size_t sizes[] = {T, T + ps + 1, MiB, 2 * MiB + 3, 5 * MiB};
  enum { N = sizeof sizes / sizeof sizes[0] };
  void *blk[N], *small[N], *span[N];
  size_t h0 = hblks(), b0 = hblkhd(), bytes = 0;
  for (unsigned i = 0; i < N; i++) {
    blk[i] = MALLOC(sizes[i]);
    small[i] = MALLOC(24 + 1000 * i);
    size_t sn = VG_SMALL_MAX + 1 + 5000 * i; /* above 64 KiB, below the threshold: a span */
    span[i] = sn < T ? MALLOC(sn) : NULL;
    REQUIRE(blk[i] && small[i] && (span[i] || sn >= T), "allocation %u failed", i);
    bytes += USABLE(blk[i]);
    CHECK(hblks() == h0 + i + 1, "after %u large blocks: hblks %zu, expected %zu", i + 1, hblks(), h0 + i + 1);
  }
  CHECK(hblks() == h0 + N, "hblks grew by %zu, expected %d", hblks() - h0, N);
  CHECK(hblkhd() == b0 + bytes, "hblkhd grew by %zu, expected %zu", hblkhd() - b0, bytes);
  for (unsigned i = 0; i < N; i++) {
    FREE(small[i]);
    FREE(span[i]);
  }
  CHECK(hblks() == h0 + N, "freeing small blocks and spans changed hblks to %zu", hblks());
  unsigned order[N] = {2, 0, 4, 1, 3};
  for (unsigned k = 0; k < N; k++) {
    FREE(blk[order[k]]);
    CHECK(hblks() == h0 + N - k - 1, "after %u frees: hblks %zu, expected %zu", k + 1, hblks(), h0 + N - k - 1);
  }
  CHECK(hblks() == h0 && hblkhd() == b0, "hblks/hblkhd %zu/%zu after freeing, expected %zu/%zu", hblks(), hblkhd(),
        h0, b0);
  printf("  6. hblks +%d and back, hblkhd +%zu and back\n", N, bytes);
}

int main(void) {
  long v = sysconf(_SC_PAGESIZE);
  REQUIRE(v > 0, "sysconf(_SC_PAGESIZE) = %ld", v);
  ps = (size_t)v;
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress and CHECK lines interleave in logs */
  printf("page size: %zu\n", ps);
  CHECK(vg_os_page_size() == ps, "vigil uses page size %zu, the system says %zu", vg_os_page_size(), ps);
  CHECK(ps == 4096 || ps == 16384 || ps == 65536, "unexpected page size %zu", ps);
  CHECK(VG_PAGE % ps == 0, "vigil page %zu is not a multiple of the OS page %zu", VG_PAGE, ps);

  void *warm = MALLOC(1); /* initialise vigil (reads the options) */
  threshold = vg_mmap_threshold();
  printf("mmap threshold: %zu\n", threshold);
  REQUIRE(threshold > ps && threshold <= 32 * MiB, "threshold %zu out of the range this test handles",
          threshold);

  test_threshold_sizes(); /* with the default, self-adjusting threshold */
  /* Freeing large blocks raised the threshold (glibc's rule); pin it back so
   * every later part knows which sizes are large. */
  printf("  threshold after the frees: %zu; pinned back to %zu\n", vg_mmap_threshold(), threshold);
  CHECK(MALLOPT(M_MMAP_THRESHOLD, (int)threshold) == 1, "mallopt(M_MMAP_THRESHOLD) failed");
  CHECK(vg_mmap_threshold() == threshold, "threshold %zu after mallopt", vg_mmap_threshold());
  test_no_reuse_as_small();
  test_small_usable();
  test_memalign();
  test_realloc();
  test_hblks();
  FREE(warm);
  return test_done("seed_large_pages");
}
