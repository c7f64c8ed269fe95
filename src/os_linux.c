/* The Linux implementation of the OS seam (os.h). */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "annotate.h"
#include "arch.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

struct vg_os_counts vg_os_counts;
_Atomic unsigned vg_os_fail_for_test;
#define COUNT(field) atomic_fetch_add_explicit(&vg_os_counts.field, 1, memory_order_relaxed)
#define INJECTED(bit) unlikely(load_relaxed(&vg_os_fail_for_test) & (bit))

static _Atomic size_t page_size;

size_t vg_os_page_size(void) {
  size_t ps = load_relaxed(&page_size);
  if (unlikely(ps == 0)) {
    long v = sysconf(_SC_PAGESIZE);
    ps = v > 0 ? (size_t)v : 4096;
    store_relaxed(&page_size, ps);
  }
  return ps;
}

void *vg_os_map(void *hint, size_t len, int rw) {
  COUNT(map);
  if (INJECTED(VG_FAIL_MAP)) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = mmap(hint, len, rw ? PROT_READ | PROT_WRITE : PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | (rw ? 0 : MAP_NORESERVE), -1, 0);
  if (p == MAP_FAILED) {
    errno = ENOMEM;
    return NULL;
  }
  vg_ann_mapped(p, len);
  return p;
}

void vg_os_unmap(void *p, size_t len) {
  int saved = errno;
  COUNT(unmap);
  vg_ann_unmapped(p, len); /* while still ours: after munmap, another thread may own it */
  munmap(p, len);
  if (INJECTED(VG_FAIL_UNMAP)) errno = ENOMEM;
  errno = saved;
}

void *vg_os_map_aligned(size_t len, size_t align, int rw) {
  /* Try the exact size first: the kernel often returns aligned addresses
   * for large requests.  Otherwise over-map and trim both ends. */
  char *p = vg_os_map(NULL, len, rw);
  if (p == NULL || ((uintptr_t)p & (align - 1)) == 0) return p;
  vg_os_unmap(p, len);
  if (len + align < len) return NULL;
  p = vg_os_map(NULL, len + align, rw);
  if (p == NULL) return NULL;
  char *a = (char *)align_up((uintptr_t)p, align);
  if (a > p) vg_os_unmap(p, (size_t)(a - p));
  if (a + len < p + len + align) vg_os_unmap(a + len, (size_t)(p + len + align - (a + len)));
  return a;
}

int vg_os_protect(void *p, size_t len, int rw) {
  COUNT(protect);
  if (INJECTED(VG_FAIL_PROTECT)) {
    errno = ENOMEM;
    return -1;
  }
  int r = mprotect(p, len, rw ? PROT_READ | PROT_WRITE : PROT_NONE);
  if (r == 0) vg_ann_mapped(p, len);
  return r;
}

int vg_os_seal(void *p, size_t len, int ro) {
  /* Whole pages only: mprotect would round len up over a neighbour (a
   * kernel with pages larger than VG_ARCH_MAX_PAGE). */
  if (len % vg_os_page_size() != 0) {
    errno = EINVAL;
    return -1;
  }
  COUNT(protect);
  if (INJECTED(VG_FAIL_SEAL)) {
    errno = ENOMEM;
    return -1;
  }
  return mprotect(p, len, ro ? PROT_READ : PROT_READ | PROT_WRITE);
}

void vg_os_decommit(void *p, size_t len, int remap) {
  int saved = errno;
  if (remap) {
    COUNT(map);
    (void)mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  } else {
    COUNT(madvise);
    (void)madvise(p, len, MADV_DONTNEED);
  }
  vg_ann_mapped(p, len);
  if (INJECTED(VG_FAIL_DECOMMIT)) errno = EINVAL;
  errno = saved;
}

int vg_os_commit(void *p, size_t len) { return vg_os_protect(p, len, 1); }

int vg_os_zero(void *p, size_t len) {
  COUNT(map);
  if (INJECTED(VG_FAIL_MAP)) {
    errno = ENOMEM;
    return -1;
  }
  void *r = mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (r == MAP_FAILED) return -1;
  vg_ann_mapped(p, len);
  return 0;
}

void vg_os_discard(void *p, size_t len) {
  int saved = errno;
  (void)madvise(p, len, MADV_DONTNEED);
  errno = saved;
}

int vg_os_resident(const void *p, size_t len, unsigned char *vec) {
  int saved = errno;
  int r = mincore((void *)p, len, vec);
  errno = saved;
  return r;
}

void *vg_os_remap(void *old, size_t oldlen, size_t newlen, void *dest) {
  COUNT(remap);
  if (INJECTED(VG_FAIL_REMAP)) {
    errno = ENOMEM;
    return NULL;
  }
  /* The pages, and their contents, go to dest, and old is anyone's once
   * mremap returns: its annotations go first.  (On a failure the block
   * stays at old without its tail's poison, until vigil_realloc moves it
   * by a copy and frees it.) */
  vg_ann_unmapped(old, oldlen);
  void *p = mremap(old, oldlen, newlen, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
  return p == MAP_FAILED ? NULL : p;
}

int vg_os_random(void *buf, size_t n) {
  char *b = buf;
  while (n > 0) {
    long r = syscall(SYS_getrandom, b, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    b += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Reads a small file with raw syscalls (stdio would allocate). */
static int read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return 0;
}

/* "0-3,5,7-8\n" -> 7.  Returns 0 for anything unparsable. */
unsigned vg_os_parse_cpu_list(const char *s) {
  unsigned total = 0;
  while (*s && *s != '\n') {
    unsigned a = 0, b;
    if (*s < '0' || *s > '9') return 0;
    while (*s >= '0' && *s <= '9') a = a * 10 + (unsigned)(*s++ - '0');
    b = a;
    if (*s == '-') {
      s++;
      if (*s < '0' || *s > '9') return 0;
      b = 0;
      while (*s >= '0' && *s <= '9') b = b * 10 + (unsigned)(*s++ - '0');
    }
    if (b < a || b - a > 1u << 20) return 0;
    total += b - a + 1;
    if (*s == ',') s++;
    else if (*s && *s != '\n') return 0;
  }
  return total;
}

unsigned vg_os_cpu_count(void) {
  char buf[512];
  unsigned n = 0;
  if (read_small("/sys/devices/system/cpu/possible", buf, sizeof buf) == 0) n = vg_os_parse_cpu_list(buf);
  if (n == 0 && read_small("/sys/devices/system/cpu/present", buf, sizeof buf) == 0) n = vg_os_parse_cpu_list(buf);
  return n ? n : 1;
}

int vg_os_parse_overcommit(const char *s) { return (s[0] >= '0' && s[0] <= '2') ? s[0] - '0' : 0; }

int vg_os_overcommit_mode(void) {
  char buf[16];
  if (read_small("/proc/sys/vm/overcommit_memory", buf, sizeof buf) != 0) return 0;
  return vg_os_parse_overcommit(buf);
}

uint64_t vg_os_now_ns(void) {
  /* The coarse clock: a few ns from the vDSO, at the tick's resolution
   * (1-4 ms), which is plenty for decay_ms. */
  struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vg_os_futex_wait(_Atomic unsigned *word, unsigned val) {
  int saved = errno;
  COUNT(futex);
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
  errno = saved;
}

void vg_os_futex_wake(_Atomic unsigned *word) {
  int saved = errno;
  COUNT(futex);
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  errno = saved;
}

void vg_os_yield(void) { sched_yield(); }

void vg_os_stack_bounds(uintptr_t *lo, uintptr_t *hi) {
  pthread_attr_t attr;
  void *base;
  size_t size;
  *lo = *hi = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &base, &size) == 0) *lo = (uintptr_t)base, *hi = (uintptr_t)base + size;
  pthread_attr_destroy(&attr);
}

void vg_os_write_err(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(2, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

const char *vg_os_getenv(const char *name) { return getenv(name); }
