/* Telling memory checkers what vigil's memory is.  Without this, a checker
 * that runs over vigil sees one big mapping: a use-after-free or an overflow
 * inside vigil's heap is invisible to it.
 *
 * Memcheck (built with -DVIGIL_VALGRIND, `make VALGRIND=1`): every mapping
 * vigil makes is NOACCESS (its metadata, free slots and tables); a block
 * handed out is a MALLOCLIKE block of the size asked for, UNDEFINED (DEFINED
 * for calloc), and the rest of its slot, its tail, stays NOACCESS; free is
 * FREELIKE; realloc in place, and malloc_usable_size (after which the whole
 * usable size is the caller's), are RESIZEINPLACE.
 * vigil reads its own NOACCESS memory, so every entry point runs with
 * memcheck's error reporting off for its thread (vg_ann_enter/leave); the
 * client requests are how it speaks, not its own loads.
 *
 * ASan and MSan (the prefixed build compiled with the sanitizer: the
 * libFuzzer targets and the replay-asan build): free slots, freed blocks and
 * the tails of live blocks are poisoned; new blocks are marked uninitialised
 * for MSan.  vigil's metadata is not poisoned: vigil's own code is
 * instrumented and reads it, and it lies between PROT_NONE guard pages, out
 * of reach of an overflow from a block.  vigil's own accesses to a block's
 * two link words go through blk_load/blk_store, which are not instrumented.
 * Under ASan each allocation and free also records its stack (history.c),
 * which vigil prints beside ASan's report of an access to the block.
 *
 * In every other build each function here is empty and costs nothing. */
#ifndef VIGIL_ANNOTATE_H
#define VIGIL_ANNOTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif
/* VIGIL_NO_POISON: a sanitizer build without it (tests/asan_poison.sh's
 * control). */
#if defined(VIGIL_PREFIX) && !defined(VIGIL_NO_POISON) && \
    (defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer))
#define VG_ASAN 1
#include <sanitizer/asan_interface.h>

#include "os.h"
#define VG_NOSAN __attribute__((noinline, unused, no_sanitize("address")))
/* history.c: each block's allocation and free stacks, for ASan's reports. */
void vg_hist_alloc(void *p, size_t n, size_t usable);
void vg_hist_free(void *p);
#elif defined(VIGIL_PREFIX) && !defined(VIGIL_NO_POISON) && __has_feature(memory_sanitizer)
#define VG_MSAN 1
#include <sanitizer/msan_interface.h>
#define VG_NOSAN __attribute__((noinline, unused, no_sanitize("memory")))
#else
#define VG_NOSAN __attribute__((always_inline)) inline
#endif
#ifdef VIGIL_VALGRIND
#define VG_MEMCHECK 1
#include <valgrind/helgrind.h>
#include <valgrind/memcheck.h>
/* drd's happens-before requests, as drd.h numbers them: helgrind's differ,
 * and the two headers' ANNOTATE_ macros clash, so one of them is spelled
 * out here. */
enum {
  VG_DRD_HAPPENS_BEFORE = VG_USERREQ_TOOL_BASE('H', 'G') + 256 + 33,
  VG_DRD_HAPPENS_AFTER = VG_USERREQ_TOOL_BASE('H', 'G') + 256 + 34,
  VG_DRD_START_SUPPRESSION = VG_USERREQ_TOOL_BASE('D', 'R') + 2,
};
#endif
#if defined(VG_ASAN) || defined(VG_MSAN) || defined(VG_MEMCHECK)
#define VG_ANNOTATE 1
#else
#define VG_ANNOTATE 0
#endif

/* A word of a block that vigil itself reads or writes: its links and tag,
 * in free slots (poisoned) and in live blocks whose tail may be poisoned. */
static VG_NOSAN uintptr_t blk_load(const uintptr_t *w) { return *w; }
static VG_NOSAN void blk_store(uintptr_t *w, uintptr_t v) { *w = v; }

/* Around every entry point: memcheck reports nothing that vigil itself does
 * in this thread (nestable). */
static inline void vg_ann_enter(void) {
#ifdef VG_MEMCHECK
  VALGRIND_DISABLE_ERROR_REPORTING;
#endif
}
static inline void vg_ann_leave(void) {
#ifdef VG_MEMCHECK
  VALGRIND_ENABLE_ERROR_REPORTING;
#endif
}

#if defined(VG_ASAN) || defined(VG_MSAN)
/* A sanitizer's poisoning writes the shadow of every byte (one for eight
 * under ASan, one for one under MSan).  A freed block is poisoned over its
 * first VG_POISON_MAX bytes only, and a new block is marked uninitialised
 * over as many: past that a multi-gigabyte block would cost its size again
 * in shadow. */
#define VG_POISON_MAX ((size_t)4 << 20)
static inline void vg_san_poison(void *p, size_t n) {
  if (n > VG_POISON_MAX) n = VG_POISON_MAX;
#ifdef VG_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  __msan_poison(p, n);
#endif
}
#endif

#ifdef VG_ASAN
/* ASan's shadow of the page-aligned range [p, p+len) back to addressable.
 * ASAN_UNPOISON_MEMORY_REGION writes every shadow byte: for a reservation
 * or a block of gigabytes it would fault in an eighth of that as shadow (a
 * 20 GiB malloc took the libFuzzer options target over its RSS limit).
 * The shadow of the first VG_POISON_MAX bytes, which a free poisons, is
 * written; past them the whole shadow pages are given back to the kernel
 * instead (they then read as zero: addressable), as ASan does for its own
 * mappings, and only the partial page at the end is written.  A discard of
 * shadow that the next free poisons costs a TLB shootdown and then a fault
 * per shadow page at that poisoning: for blocks up to VG_POISON_MAX it made
 * the fork target four times slower, and discarding all but the ends of
 * bigger ones was 194k of the 333k shadow faults of a threads working
 * corpus under libFuzzer (perf record -e page-faults -d). */
static inline void vg_asan_clear(void *p, size_t len) {
  size_t scale, offset, ps = vg_os_page_size();
  __asan_get_shadow_mapping(&scale, &offset);
  uintptr_t beg = (uintptr_t)p, end = beg + len;
  uintptr_t sbeg = ((beg + VG_POISON_MAX) >> scale) + offset, send = (end >> scale) + offset;
  uintptr_t mid_beg = (sbeg + ps - 1) & ~(uintptr_t)(ps - 1);
  uintptr_t mid_end = send & ~(uintptr_t)(ps - 1);
  if (len <= VG_POISON_MAX || mid_end <= mid_beg) {
    ASAN_UNPOISON_MEMORY_REGION(p, len);
    return;
  }
  uintptr_t head_end = (mid_beg - offset) << scale, tail_beg = (mid_end - offset) << scale;
  ASAN_UNPOISON_MEMORY_REGION(p, head_end - beg);
  vg_os_discard((void *)mid_beg, mid_end - mid_beg);
  ASAN_UNPOISON_MEMORY_REGION((void *)tail_beg, end - tail_beg);
}

/* The same for a mapping vigil just made or is about to give back (its
 * ends are pages), writing only the shadow pages that hold poison.  A
 * segment's 512 KiB of shadow was written whole at each map and unmap: a
 * quarter of the threads target's page faults under libFuzzer (the oracle
 * trims, and so unmaps and maps segments, at every input), and after a
 * fork each of those pages is copied at its first write.  Here a shadow
 * page that is resident is read (ASan's own scan) and written only when it
 * holds poison; one that is not resident reads as zero already, and is
 * discarded in case it was swapped out (a no-op under qemu-user 7.2, whose
 * madvise does nothing; a swapped-out shadow page there keeps what it
 * held).  mincore's answer only decides the cost: either branch leaves the
 * page zero.  Past 16 of its calls (a reservation over 128 MiB), and where
 * it fails, vg_asan_clear does the work. */
#define VG_SHADOW_SCAN ((size_t)1 << 20) /* shadow bytes a mincore call covers */
static inline void vg_asan_clear_mapping(void *p, size_t len) {
  size_t scale, offset, ps = vg_os_page_size();
  __asan_get_shadow_mapping(&scale, &offset);
  uintptr_t beg = (uintptr_t)p, end = beg + len;
  uintptr_t mid_beg = (((beg >> scale) + offset) + ps - 1) & ~(uintptr_t)(ps - 1);
  uintptr_t mid_end = ((end >> scale) + offset) & ~(uintptr_t)(ps - 1);
  if (mid_end <= mid_beg || mid_end - mid_beg > 16 * VG_SHADOW_SCAN) {
    vg_asan_clear(p, len);
    return;
  }
#define VG_APP(s) (((s) - offset) << scale)
  ASAN_UNPOISON_MEMORY_REGION(p, VG_APP(mid_beg) - beg);
  ASAN_UNPOISON_MEMORY_REGION((void *)VG_APP(mid_end), end - VG_APP(mid_end));
  unsigned char vec[VG_SHADOW_SCAN / 4096 + 1];
  for (uintptr_t c = mid_beg; c < mid_end; c += VG_SHADOW_SCAN) {
    size_t clen = mid_end - c < VG_SHADOW_SCAN ? mid_end - c : VG_SHADOW_SCAN, n = clen / ps;
    if (vg_os_resident((void *)c, clen, vec) != 0) {
      ASAN_UNPOISON_MEMORY_REGION((void *)VG_APP(c), clen << scale);
      continue;
    }
    uintptr_t gone = 0; /* the start of a run of pages not resident */
    for (size_t i = 0; i <= n; i++) {
      uintptr_t s = c + i * ps;
      if (i < n && !(vec[i] & 1)) {
        if (!gone) gone = s;
        continue;
      }
      if (gone) vg_os_discard((void *)gone, s - gone);
      gone = 0;
      if (i < n && __asan_region_is_poisoned((void *)VG_APP(s), ps << scale))
        ASAN_UNPOISON_MEMORY_REGION((void *)VG_APP(s), ps << scale);
    }
  }
#undef VG_APP
}
#endif

/* Happens-before edges for helgrind and drd (the Valgrind build; memcheck
 * ignores them).  vigil hands memory from thread to thread through its own
 * futex locks and the release/acquire remote-free stacks, which those tools
 * do not model: without the edges, a block written by one thread, freed,
 * and handed to another that writes it looks like a race.  `obj` is any
 * address both sides agree on: the lock, the stack head, or the block. */
static inline void vg_ann_release(const void *obj) {
  (void)obj;
#ifdef VG_MEMCHECK
  ANNOTATE_HAPPENS_BEFORE(obj);
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_DRD_HAPPENS_BEFORE, obj, 0, 0, 0, 0);
#endif
}
static inline void vg_ann_acquire(const void *obj) {
  (void)obj;
#ifdef VG_MEMCHECK
  ANNOTATE_HAPPENS_AFTER(obj);
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_DRD_HAPPENS_AFTER, obj, 0, 0, 0, 0);
#endif
}

/* The n bytes at w are a synchronisation word (a lock word, a remote-free
 * stack head) that threads read and write only with atomic operations.
 * helgrind sees its lock-prefixed updates as such; drd checks plain loads
 * of it against other threads' stores and reports the relaxed loads of a
 * spin or of a CAS loop, so drd is told to leave the word alone (its
 * DRD_IGNORE_VAR).  The edges above still order what the word guards. */
static inline void vg_ann_sync_word(const void *w, size_t n) {
  (void)w, (void)n;
#ifdef VG_MEMCHECK
  VALGRIND_DO_CLIENT_REQUEST_STMT(VG_DRD_START_SUPPRESSION, w, n, 0, 0, 0);
#endif
}

/* [p, p+len) is a mapping vigil just made (or replaced): its own until it
 * hands part of it out. */
static inline void vg_ann_mapped(void *p, size_t len) {
  (void)p, (void)len;
#ifdef VG_MEMCHECK
  VALGRIND_MAKE_MEM_NOACCESS(p, len);
#endif
#ifdef VG_ASAN
  vg_asan_clear_mapping(p, len);
#endif
}

/* [p, p+len) is no longer mapped by vigil: whatever maps it next starts
 * clean (memcheck follows munmap on its own). */
static inline void vg_ann_unmapped(void *p, size_t len) {
  (void)p, (void)len;
#ifdef VG_ASAN
  vg_asan_clear_mapping(p, len);
#endif
}

/* Fresh free slots [p, p+len): nobody's. */
static inline void vg_ann_slots(void *p, size_t len) {
  (void)p, (void)len;
#ifdef VG_MEMCHECK
  VALGRIND_MAKE_MEM_NOACCESS(p, len);
#endif
#if defined(VG_ASAN) || defined(VG_MSAN)
  vg_san_poison(p, len);
#endif
}

/* Bytes [p, p+n) vigil is about to write for itself on a cold path (the
 * zero fill of a cached mapping when fresh pages could not be had). */
static inline void vg_ann_writable(void *p, size_t n) {
  (void)p, (void)n;
#ifdef VG_MEMCHECK
  VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#endif
#ifdef VG_ASAN
  vg_asan_clear(p, n);
#endif
}

/* The tail [p+n, p+usable) of a live block. */
static inline void vg_ann_close_tail(void *p, size_t n, size_t usable) {
  (void)p, (void)n, (void)usable;
  if (n >= usable) return;
#ifdef VG_MEMCHECK
  VALGRIND_MAKE_MEM_NOACCESS((char *)p + n, usable - n);
#endif
#ifdef VG_ASAN
  vg_san_poison((char *)p + n, usable - n);
#endif
}

#ifdef VG_MEMCHECK
/* The size memcheck holds for the live block p: its first unaddressable
 * byte, since [p, p+size) is addressable and the tail up to `usable` is not
 * (by construction).  Found by bisection: GET_VBITS fails there without a
 * report. */
static inline size_t vg_ann_held(const void *p, size_t usable) {
  unsigned char vbits;
  size_t lo = 0, hi = usable;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (VALGRIND_GET_VBITS((const char *)p + mid, &vbits, 1) == 3) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
#endif

/* A new block: p, n bytes asked for, `usable` in all, zeroed or not. */
static inline void vg_ann_alloc(void *p, size_t n, size_t usable, bool zeroed) {
  (void)p, (void)n, (void)usable, (void)zeroed;
  vg_ann_acquire(p); /* after every earlier free of p, in any thread */
#ifdef VG_MEMCHECK
  VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, zeroed);
#endif
#ifdef VG_ASAN
  vg_asan_clear(p, n);
  vg_hist_alloc(p, n, usable);
#endif
#ifdef VG_MSAN
  if (zeroed) __msan_unpoison(p, n);
  else __msan_allocated_memory(p, n < VG_POISON_MAX ? n : VG_POISON_MAX);
#endif
  vg_ann_close_tail(p, n, usable);
}

/* A live block's whole usable size becomes the caller's, contents kept:
 * after malloc_usable_size said it may be used, or before realloc copies
 * it. */
static inline void vg_ann_open(void *p, size_t usable) {
  (void)p, (void)usable;
#ifdef VG_MEMCHECK
  if (!RUNNING_ON_VALGRIND) return;
  size_t held = vg_ann_held(p, usable);
  if (held < usable) VALGRIND_RESIZEINPLACE_BLOCK(p, held, usable, 0);
#endif
#ifdef VG_ASAN
  vg_asan_clear(p, usable);
#endif
}

/* A block freed: nothing of it is the user's any more. */
/* A block is freed.  `poison`: its memory stays addressable (a slot or a
 * span), so the sanitizers must be told.  A large block is poisoned by
 * large.c only when its mapping goes to the cache (vg_ann_cached): buried
 * PROT_NONE or unmapped, any access to it faults, and its shadow is cleared
 * with the mapping (vg_ann_mapped, vg_ann_unmapped).  Poisoning such a
 * block first wrote up to 512 KiB of shadow only to clear it again: a third
 * of the threads target's page faults under libFuzzer. */
static inline void vg_ann_free(void *p, size_t usable, bool poison) {
  (void)p, (void)usable, (void)poison;
  vg_ann_release(p);
#ifdef VG_MEMCHECK
  VALGRIND_FREELIKE_BLOCK(p, 0);
  VALGRIND_MAKE_MEM_NOACCESS(p, usable);
#endif
#if defined(VG_ASAN) || defined(VG_MSAN)
  if (poison) vg_san_poison(p, usable);
#endif
#ifdef VG_ASAN
  vg_hist_free(p);
#endif
}

/* A freed large block whose mapping the cache keeps, readable and
 * writable: from here on an access to it is a use after free.  Called
 * before the cache can hand it out again. */
static inline void vg_ann_cached(void *p, size_t usable) {
  (void)p, (void)usable;
#if defined(VG_ASAN) || defined(VG_MSAN)
  vg_san_poison(p, usable);
#endif
}

/* realloc in place: from `old` usable bytes to `usable`, n of them asked
 * for; the bytes up to the smaller size keep their state. */
static inline void vg_ann_resize(void *p, size_t old, size_t usable, size_t n) {
  (void)p, (void)old, (void)usable, (void)n;
#ifdef VG_MEMCHECK
  if (RUNNING_ON_VALGRIND) VALGRIND_RESIZEINPLACE_BLOCK(p, vg_ann_held(p, old), n, 0);
#endif
#ifdef VG_ASAN
  if (usable < old) vg_san_poison((char *)p + usable, old - usable);
  vg_asan_clear(p, n);
  vg_hist_alloc(p, n, usable); /* realloc's stack from now on */
#endif
  vg_ann_close_tail(p, n, usable);
}

/* realloc that moved a block's pages from p to q without a copy (mremap,
 * which carries memcheck's state of each byte along): memcheck's record
 * moves, and the moved bytes count as defined, since MALLOCLIKE cannot keep
 * their state (a known gap). */
static inline void vg_ann_moved(void *p, void *q, size_t old, size_t usable, size_t n) {
  (void)p, (void)q, (void)old, (void)usable, (void)n;
  vg_ann_release(p);
  vg_ann_acquire(q);
#ifdef VG_MEMCHECK
  size_t held = RUNNING_ON_VALGRIND ? vg_ann_held(q, old) : old;
  VALGRIND_FREELIKE_BLOCK(p, 0);
  VALGRIND_MALLOCLIKE_BLOCK(q, n, 0, 1);
  if (held < n) VALGRIND_MAKE_MEM_UNDEFINED((char *)q + held, n - held);
#endif
#ifdef VG_ASAN
  vg_asan_clear(q, n);
  vg_hist_free(p);
  vg_hist_alloc(q, n, usable);
#endif
  vg_ann_close_tail(q, n, usable);
}

#endif
