/* Architecture facts, alignment helpers and the atomics vigil uses.
 * Every assumption the rest of the code makes is asserted here. */
#ifndef VIGIL_ARCH_H
#define VIGIL_ARCH_H

#include <assert.h>
#include <limits.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define HIDDEN __attribute__((visibility("hidden")))

/* glibc's MALLOC_ALIGNMENT: 16 on every 64-bit target and on i686
 * (where long double needs it); 8 would do on armhf but 16 keeps one rule. */
#define VG_ALIGN 16u
/* A vigil page: the unit segments are cut into.  64 KiB is a multiple of
 * every OS page size we run on (4, 16 and 64 KiB). */
#define VG_PAGE_SHIFT 16u
#define VG_PAGE ((size_t)1 << VG_PAGE_SHIFT)
/* Segments: aligned, so any pointer finds its header by masking. */
#define VG_SEG_SHIFT 22u
#define VG_SEG ((size_t)1 << VG_SEG_SHIFT)
#define VG_SEG_PAGES (VG_SEG / VG_PAGE)
/* Largest OS page we support; guard regions are this big so one layout
 * works everywhere. */
#define VG_MAX_OS_PAGE ((size_t)64 << 10)
/* The largest page this architecture's kernels use (4 KiB on x86, s390x,
 * riscv64 and 32-bit arm; 64 KiB elsewhere): what static data sealed alone
 * on its pages (seal.c) is aligned to.  No more than that: static data
 * aligned past the linker's page size (4 KiB on x86-64) makes ld give .bss a
 * LOAD segment of its own, and Valgrind 3.19 then reads none of the
 * library's symbols or unwind tables (tests/valgrind_demo.sh). */
#if defined(__x86_64__) || defined(__i386__) || defined(__s390x__) || defined(__riscv) || defined(__arm__)
#define VG_ARCH_MAX_PAGE ((size_t)4 << 10)
#else
#define VG_ARCH_MAX_PAGE VG_MAX_OS_PAGE
#endif

static_assert(sizeof(void *) == sizeof(uintptr_t), "flat pointers");
static_assert(CHAR_BIT == 8, "octets");
static_assert(VG_SEG_PAGES == 64, "a segment's page masks are one uint64_t");
static_assert(VG_PAGE % VG_MAX_OS_PAGE == 0, "vigil pages cover whole OS pages");
static_assert(VG_MAX_OS_PAGE % VG_ARCH_MAX_PAGE == 0, "the arch's pages are among those");
static_assert(alignof(max_align_t) <= VG_ALIGN, "VG_ALIGN covers max_align_t");
static_assert((VG_ALIGN & (VG_ALIGN - 1)) == 0, "power of two");

/* The address space the segment registry covers.  Segments are mapped by
 * the kernel below this on every Linux target we support; one mapped above
 * is released and the request fails rather than go unvalidated. */
#if UINTPTR_MAX > 0xffffffffu
#define VG_ADDR_BITS 48u
#else
#define VG_ADDR_BITS 32u
#endif

static ALWAYS_INLINE uintptr_t align_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }
static ALWAYS_INLINE uintptr_t align_down(uintptr_t x, uintptr_t a) { return x & ~(a - 1); }
static ALWAYS_INLINE int is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Atomics: explicit C11 orders only.  Names say the order. */
#define load_relaxed(p) atomic_load_explicit((p), memory_order_relaxed)
#define store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
#define store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)

/* A pause in a spin loop. */
static ALWAYS_INLINE void vg_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#else
  __asm__ volatile("" ::: "memory");
#endif
}

#endif
