/* A program with one heap error of its own (argv[1]) in vigil's prefixed
 * build, all compiled with ASan or with MSan: vigil poisons free slots and
 * the tails of blocks for ASan, and marks new blocks uninitialised for MSan
 * (src/annotate.h), so the sanitizer must stop the program at the bad
 * access.  tests/asan_poison.sh runs it, and a control build without the
 * annotations (-DVIGIL_NO_POISON), where the same access goes unseen. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "annotate.h"
#include "vigil.h"

static volatile unsigned char sink;

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "clean";
  unsigned char *p = vigil_malloc(24), *s = vigil_malloc(100000);
  if (p == NULL || s == NULL) return 2;
  memset(p, 1, 24);
  memset(s, 1, 100000);
  if (strcmp(what, "use-after-free") == 0) {
    vigil_free(p);
    sink = p[8]; /* the block sits in vigil's thread cache */
    p = vigil_malloc(24);
  } else if (strcmp(what, "overflow") == 0) {
    p[24] = 7; /* past the 24 bytes asked for, inside the 32-byte slot */
  } else if (strcmp(what, "span-use-after-free") == 0) {
    vigil_free(s);
    sink = s[50000];
    s = vigil_malloc(100000);
  } else if (strcmp(what, "large-use-after-free") == 0) {
    /* A freed mapped block stays mapped in vigil's cache (src/large.c):
     * poisoned when it goes in, since a read of it does not fault. */
    unsigned char *big = vigil_malloc((size_t)2 << 20);
    if (big == NULL) return 2;
    memset(big, 1, (size_t)2 << 20);
    vigil_free(big);
    sink = big[1 << 20];
  } else if (strcmp(what, "large-reuse") == 0) {
    /* A mapped block bigger than the part a free poisons (VG_POISON_MAX),
     * freed into the cache and handed out again: all of it is addressable.
     * The cache keeps the newest block back (src/large.c), so two go in. */
    size_t len = (size_t)12 << 20;
    unsigned char *a = vigil_malloc(len), *b = vigil_malloc(len);
    if (a == NULL || b == NULL) return 2;
    memset(a, 1, len);
    memset(b, 1, len);
    vigil_free(a);
    vigil_free(b);
    unsigned char *again = vigil_malloc(len);
    if (again != a) {
      fprintf(stderr, "asan_poison: the cache did not hand out %p again (got %p)\n", (void *)a, (void *)again);
      return 2;
    }
    memset(again, 2, len);
    vigil_free(again);
  } else if (strcmp(what, "uninit") == 0) {
    vigil_free(p);
    p = vigil_malloc(24); /* the same slot, its old bytes still in it */
    if (p[20] == 1) sink = 1; /* a branch on a byte nobody wrote */
  } else if (strcmp(what, "clean") == 0) {
    /* Every path of a block's life, without an error. */
    size_t u = vigil_malloc_usable_size(p);
    memset(p, 2, u);
    p = vigil_realloc(p, 20);
    p = vigil_realloc(p, 5000);
    memset(p, 3, 5000);
    s = vigil_realloc(s, 150000);
    s[149999] = 4;
    s = vigil_realloc(s, 60000);
    s[59999] = 5;
    unsigned char *z = vigil_calloc(10, 10);
    if (!p || !s || !z || z[99] != 0) return 2;
    vigil_free(z);
  } else if (strcmp(what, "large-shrink") == 0) {
    /* A mapped block shrunk to a fifth gives back the address space past
     * twice its new size (src/large.c), and another thread may map there
     * at once: its memory must not come out poisoned.  vigil poisoned the
     * shrunk tail after the unmap, over the new mapping too (found by
     * make fuzz-bench's threads run, 2026-12-05).  The new mapping here is
     * made at the freed address, as the kernel gave it to that thread. */
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), mib = (size_t)1 << 20;
    unsigned char *big = vigil_malloc(5 * mib);
    if (big == NULL) return 2;
    memset(big, 6, 5 * mib);
    unsigned char *small = vigil_realloc(big, mib);
    if (small != big) return 2; /* shrinks stay in place */
    unsigned char *at = (unsigned char *)(((uintptr_t)small + 3 * mib + ps - 1) & ~(uintptr_t)(ps - 1));
    unsigned char *m = mmap(at, mib, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m != at) {
      fprintf(stderr, "asan_poison: %p is not free after the shrink (got %p)\n", (void *)at, (void *)m);
      return 2;
    }
    m[0] = 1; /* the other mapping's own memory */
    munmap(m, mib);
    vigil_free(small);
  } else if (strcmp(what, "mapping-clear") == 0) {
#ifdef VG_ASAN
    /* A range vigil maps or unmaps comes out addressable however its
     * shadow was left: here in 32 KiB strides (a 4 KiB shadow page each)
     * poisoned, poisoned and made addressable again (resident, zero), and
     * not resident (src/annotate.h, vg_asan_clear_mapping, which writes
     * only the resident pages that hold poison).  The range's ends are not
     * on shadow pages, and what lies outside it keeps its poison. */
    size_t mib = (size_t)1 << 20, stride = 32768;
    unsigned char *map = mmap(NULL, 10 * mib + stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return 2;
    unsigned char *m = (unsigned char *)(((uintptr_t)map + stride - 1) & ~(uintptr_t)(stride - 1));
    size_t scale, offset;
    __asan_get_shadow_mapping(&scale, &offset);
    for (size_t off = 0; off + 3 * stride <= 10 * mib; off += 3 * stride) {
      ASAN_POISON_MEMORY_REGION(m + off, 2 * stride);
      ASAN_UNPOISON_MEMORY_REGION(m + off + stride, stride);
      /* The third not resident (with transparent huge pages the writes
       * above may have made all of it resident). */
      uintptr_t third = (((uintptr_t)m + off + 2 * stride) >> scale) + offset;
      madvise((void *)third, stride >> scale, MADV_DONTNEED);
    }
    /* From 4 KiB into one poisoned stride (the 28th) to 4 KiB before the
     * end of another (the 286th). */
    unsigned char *r = m + 27 * stride + 4096, *end = m + 285 * stride + stride - 4096;
    size_t len = (size_t)(end - r);
    if (__asan_region_is_poisoned(r, 4096) != r || !__asan_address_is_poisoned(end - 1)) return 2;
    vg_ann_mapped(r, len);
    memset(r, 7, len); /* stops at the first byte still poisoned */
    if (!__asan_address_is_poisoned(r - 1) || !__asan_address_is_poisoned(end)) {
      fprintf(stderr, "asan_poison: the poison outside the range is gone\n");
      return 3;
    }
    ASAN_UNPOISON_MEMORY_REGION(m, 10 * mib);
    munmap(map, 10 * mib + stride);
#endif
  } else {
    fprintf(stderr, "asan_poison: unknown case %s\n", what);
    return 2;
  }
  vigil_free(p);
  vigil_free(s);
  puts("finished");
  return 0;
}
