/* Seed 000 (mremap): growing a large block moves its pages with mremap, no
 * copy.  Also the regression test for a race found by seed_fork_storm: after
 * mremap moved the pages, another thread could map a new block at the old
 * address while the old table entry was still present, leaving two entries
 * with one key and a wrong usable size (a later realloc copied past the end
 * of the mapping). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "testlib.h"

static _Atomic int bad;

static void *grower(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (int round = 0; round < 400 && !bad; round++) {
    size_t n = 150000 + (seed = seed * 1103515245u + 12345u) % 50000;
    unsigned char *p = malloc(n);
    if (!p) { bad = 1; break; }
    memset(p, 0x5a, n);
    for (int step = 0; step < 4; step++) {
      size_t m = n * 2 + 4096;
      unsigned char *q = realloc(p, m);
      if (!q) { bad = 1; break; }
      size_t u = malloc_usable_size(q);
      if (u < m || q[n - 1] != 0x5a || q[0] != 0x5a) {
        fprintf(stderr, "realloc to %zu: usable %zu, contents %02x %02x\n", m, u, q[0], q[n - 1]);
        bad = 1;
      }
      q[u - 1] = 1; /* the whole usable size must be mapped */
      memset(q + n, 0x5a, m - n);
      p = q;
      n = m;
    }
    free(p);
    /* Churn other large mappings, so freed addresses get reused. */
    void *other = malloc(160000 + round * 64);
    free(other);
  }
  return NULL;
}

static _Atomic int stop;
/* Maps and unmaps blocks of the growers' sizes, so that a just-vacated
 * address is handed out again while a grower is between mremap and its
 * table update. */
static void *churner(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  while (!stop) {
    size_t n = 300000 + (seed = seed * 1103515245u + 12345u) % 2000000;
    unsigned char *p = malloc(n);
    if (p) {
      p[0] = p[n - 1] = 1;
      free(p);
    }
  }
  return NULL;
}

/* One block grown by +4 KiB steps from 16 B to 256 MiB (issue 8: it moved
 * 16,941 times, each time moving its page tables into a fresh reservation,
 * and did not finish in 4 s).  It must move O(log n) times, make at most one
 * syscall per call amortized (far fewer: headroom is committed an eighth
 * ahead), keep every byte, and keep a guard page right after its usable
 * size; then shrinking it stays in place. */
static void grow_by_steps(void) {
  const size_t step = 4096, top = (size_t)256 << 20;
  unsigned long s0 = load_relaxed(&vg_os_counts.map) + load_relaxed(&vg_os_counts.unmap) +
                     load_relaxed(&vg_os_counts.protect) + load_relaxed(&vg_os_counts.remap) +
                     load_relaxed(&vg_os_counts.madvise);
  size_t n = 16, calls = 0, moves = 0, lost = 0;
  unsigned char *p = malloc(n);
  REQUIRE(p, "malloc(16)");
  p[0] = 0xA5;
  while (n < top) {
    size_t m = n + step > top ? top : n + step;
    unsigned char *q = realloc(p, m);
    REQUIRE(q, "realloc to %zu", m);
    calls++;
    moves += q != p;
    p = q;
    for (size_t k = align_up(n, step); k < m; k += step) p[k] = (unsigned char)(k >> 12);
    n = m;
  }
  unsigned long sys = load_relaxed(&vg_os_counts.map) + load_relaxed(&vg_os_counts.unmap) +
                      load_relaxed(&vg_os_counts.protect) + load_relaxed(&vg_os_counts.remap) +
                      load_relaxed(&vg_os_counts.madvise) - s0;
  for (size_t k = step; k < n; k += step) lost += p[k] != (unsigned char)(k >> 12);
  printf("grow by 4 KiB steps to 256 MiB: %zu calls, %zu moves, %lu syscalls\n", calls, moves, sys);
  CHECK(p[0] == 0xA5 && lost == 0, "%zu pages lost their byte", lost);
  /* log2(256 MiB / 16 B) = 24 doublings; small classes step by 1.25x. */
  CHECK(moves <= 48, "%zu moves for one growing block (O(log n) wanted)", moves);
  CHECK(sys <= 512, "%lu syscalls for %zu reallocs", sys, calls);
  size_t u = malloc_usable_size(p);
  CHECK(u >= n && tl_readable(p + u - 1) && !tl_readable(p + u), "no guard page right after the usable size %zu", u);
  unsigned char *s = realloc(p, 1 << 20);
  CHECK(s == p, "shrinking 256 MiB to 1 MiB moved the block");
  u = malloc_usable_size(s);
  CHECK(u >= (1 << 20) && u < (2 << 20) && !tl_readable(s + u), "after the shrink: usable %zu, guard after it", u);
  CHECK(s[0] == 0xA5 && s[(1 << 20) - step] == (unsigned char)(((1 << 20) - step) >> 12), "contents after the shrink");
  free(s);
}

int main(void) {
  grow_by_steps();
  /* mremap, not copy: growing a 1 MiB block to 16 MiB. */
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  unsigned char *p = malloc(1 << 20);
  REQUIRE(p, "malloc");
  for (size_t i = 0; i < (1 << 20); i += 4096) p[i] = (unsigned char)(i >> 12);
  unsigned long r0 = load_relaxed(&vg_os_counts.remap);
  unsigned char *q = realloc(p, 16 << 20);
  REQUIRE(q, "realloc");
  /* One: the pages move into a new guarded reservation with headroom (no
   * copy, never a bare MREMAP_MAYMOVE: qemu-targets/README.md). */
  CHECK(load_relaxed(&vg_os_counts.remap) == r0 + 1, "grow used %lu mremap calls", load_relaxed(&vg_os_counts.remap) - r0);
  int same = 1;
  for (size_t i = 0; i < (1 << 20); i += 4096) same &= q[i] == (unsigned char)(i >> 12);
  CHECK(same, "contents lost by mremap");
  q[(16 << 20) - 1] = 7;
  /* Shrinking within the same class of use keeps the block in place. */
  unsigned char *s = realloc(q, 10 << 20);
  CHECK(s == q, "shrink moved the block");
  CHECK(malloc_usable_size(s) >= (10 << 20), "usable after shrink");
  free(s);

  /* A grow the kernel cannot commit (31 TiB: more than RAM and swap, within
   * the address space) fails at once, with no PROT_NONE reservation of that
   * size first: under qemu-user one cost 40 s and 24 GiB
   * (corpus/regressions/api/NOTES).  Under overcommit_memory=1 the kernel would
   * grant it, so there is nothing to check. */
  char mode = '0';
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  if (f) {
    mode = (char)fgetc(f);
    fclose(f);
  }
  if (mode == '1') {
    printf("note: overcommit_memory=1: a 31 TiB grow would succeed; the no-reservation check needs mode 0 or 2\n");
  } else {
    unsigned char *b = malloc(4 << 20);
    REQUIRE(b, "malloc");
    memset(b, 5, 4 << 20);
    unsigned long m0 = load_relaxed(&vg_os_counts.map);
    errno = 0;
    unsigned char *h = realloc(b, (size_t)31 << 40);
    CHECK(h == NULL && errno == ENOMEM, "31 TiB grow gave %p, errno %d", (void *)h, errno);
    /* Two RW maps, each refused at once: large.c's commit probe and the
     * allocate-copy fallback.  Without the probe, a NORESERVE reservation
     * would be made and the grow would succeed (h != NULL above). */
    CHECK(load_relaxed(&vg_os_counts.map) - m0 == 2, "31 TiB grow made %lu map calls", load_relaxed(&vg_os_counts.map) - m0);
    if (h == NULL) {
      CHECK(b[0] == 5 && b[(4 << 20) - 1] == 5 && malloc_usable_size(b) >= (4 << 20), "the block changed after a failed grow");
      free(b);
    } else {
      free(h);
    }
  }

  vg_option_set(OPT_large_cache, 0); /* every free unmaps: addresses recycle */
  pthread_t t[4], c[2];
  for (int i = 0; i < 2; i++) pthread_create(&c[i], NULL, churner, (void *)(uintptr_t)(i + 7));
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, grower, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  stop = 1;
  for (int i = 0; i < 2; i++) pthread_join(c[i], NULL);
  CHECK(!bad, "concurrent large realloc failed (see above)");
  struct mallinfo2 mi = mallinfo2();
  CHECK(mi.hblks == 0, "%zu large blocks still live", mi.hblks);
  return test_done("seed_large_realloc");
}
