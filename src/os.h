/* The OS seam: the only interface through which vigil reaches the kernel.
 * os_linux.c is the only file that calls mmap, munmap, madvise, mprotect,
 * mremap, mincore, futex, sched_yield, getrandom or reads /proc and /sys.  Contract for every function:
 *   - it never allocates and takes no allocator lock;
 *   - functions used on free paths (unmap, decommit) preserve errno;
 *   - failures return NULL / -1 and leave errno as the kernel set it. */
#ifndef VIGIL_OS_H
#define VIGIL_OS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

size_t vg_os_page_size(void);  /* read at run time: 4, 16 or 64 KiB */
/* Anonymous private mapping.  rw=0 reserves address space only. */
void *vg_os_map(void *hint, size_t len, int rw);
/* A mapping of `len` bytes aligned to `align` (a power of two). */
void *vg_os_map_aligned(size_t len, size_t align, int rw);
void vg_os_unmap(void *p, size_t len);
int vg_os_protect(void *p, size_t len, int rw);
/* Read-only (ro=1) or read-write (ro=0): for vigil's own metadata in its
 * image (seal.c), so no annotation; its failure is injected apart (VG_FAIL_SEAL),
 * so a test can refuse a run's guard and a registry page separately. */
int vg_os_seal(void *p, size_t len, int ro);
/* Return memory to the OS.  remap=0: MADV_DONTNEED (contents become
 * unspecified: qemu-user may not zero them).  remap=1: replace with a fresh
 * PROT_NONE mapping, which also drops the commit charge; vg_os_commit() must
 * then run before the range is used again. */
void vg_os_decommit(void *p, size_t len, int remap);
int vg_os_commit(void *p, size_t len);
/* Replace the pages of an RW range with fresh zero pages (MAP_FIXED): what
 * calloc of a reused mapping needs, without writing every byte.  Returns -1
 * (the range unchanged) on failure. */
int vg_os_zero(void *p, size_t len);
/* MADV_DONTNEED with nothing else: no counter, no annotation.  For ranges
 * that are not vigil's heap (annotate.h: a sanitizer's shadow). */
void vg_os_discard(void *p, size_t len);
/* mincore: vec[i] bit 0 says whether the i-th page of [p, p+len) is
 * resident.  vec holds at least len / 4096 + 1 bytes (a page is never
 * smaller; under qemu-user the kernel's pages may be smaller than the
 * guest's, and it fills one byte per page of its own).  No counter, no
 * annotation, errno kept; -1 on failure.  For a sanitizer's shadow. */
int vg_os_resident(const void *p, size_t len, unsigned char *vec);
/* mremap to `dest` (MREMAP_MAYMOVE | MREMAP_FIXED), which the caller has
 * reserved.  Never a bare MREMAP_MAYMOVE: under qemu-user -R (reserved_va)
 * one that fails still unmaps the old range (qemu-targets/README.md). */
void *vg_os_remap(void *old, size_t oldlen, size_t newlen, void *dest);
int vg_os_random(void *buf, size_t n);
/* CPUs the system has (/sys/devices/system/cpu/possible): never the
 * affinity mask, which glibc 2.34-2.38 used to its cost (seed 001). */
unsigned vg_os_cpu_count(void);
/* /proc/sys/vm/overcommit_memory, or 0 when unreadable. */
int vg_os_overcommit_mode(void);
uint64_t vg_os_now_ns(void);
/* Lock waits (lock.c): sleep while *word == val; wake one sleeper. */
void vg_os_futex_wait(_Atomic unsigned *word, unsigned val);
void vg_os_futex_wake(_Atomic unsigned *word);
void vg_os_yield(void);
void vg_os_write_err(const char *s, size_t n);
const char *vg_os_getenv(const char *name);
/* The calling thread's stack, [*lo, *hi) (history.c's stack walk, in the
 * ASan build; both 0 if unknown). */
void vg_os_stack_bounds(uintptr_t *lo, uintptr_t *hi);

/* Parsers behind the two readers above, exposed for unit tests. */
unsigned vg_os_parse_cpu_list(const char *s);
int vg_os_parse_overcommit(const char *s);

/* Fault injection for tests: while a bit is set, that primitive fails as the
 * kernel would (map/protect/remap/seal return failure with ENOMEM; unmap and
 * decommit do their work but leave errno clobbered, as a failing syscall
 * would).  Checked only on the syscall paths. */
enum { VG_FAIL_MAP = 1, VG_FAIL_UNMAP = 2, VG_FAIL_DECOMMIT = 4, VG_FAIL_PROTECT = 8, VG_FAIL_REMAP = 16, VG_FAIL_SEAL = 32 };
extern _Atomic unsigned vg_os_fail_for_test;

/* Syscall counters: tests check that free paths stay O(1) in syscalls. */
struct vg_os_counts {
  _Atomic unsigned long map, unmap, madvise, protect, remap, futex;
};
extern struct vg_os_counts vg_os_counts;

#endif
