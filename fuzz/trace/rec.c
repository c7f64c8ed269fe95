/* The trace recorder: an LD_PRELOAD library (build/libvigil-trace.so) that
 * is vigil (the prefixed build, linked in) plus a log of every malloc-family
 * call the program makes, for diff/trace2ops.py to turn into op programs.
 *
 *   VIGIL_TRACE=/tmp/t/git LD_PRELOAD=build/libvigil-trace.so git status
 *
 * writes /tmp/t/git.<pid>, one file per process (a fork child starts its
 * own).  Without VIGIL_TRACE it records nothing and is just vigil.
 *
 * The file: a 16-byte header ("VGTRACE1", record size, pid, little-endian
 * as the host), then fixed-size records (struct trace_rec below).  Every
 * record has a sequence number from one process-wide counter, taken after
 * an allocation returns and before a free starts, so sorting by it gives an
 * order in which no address is handed out while it is still live.  The
 * block id is the block's address; the converter numbers blocks from it in
 * that order.
 *
 * Nothing here allocates through the allocator it records, and nothing
 * takes a lock: each thread fills its own buffer (mapped with mmap) and
 * appends it whole to the file with one write on an O_APPEND descriptor.
 * So a fork, even from a signal handler that interrupted a record, cannot
 * deadlock here: the child drops the buffers it inherited (the parent
 * writes them) and opens its own file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define VIGIL_PREFIX
#include "vigil.h"
#include "trace.h"

#define EXPORT __attribute__((visibility("default")))
#define BUF_BYTES ((size_t)64 << 10)
#define BUF_RECS (BUF_BYTES / sizeof(struct trace_rec))

struct tbuf {
  struct tbuf *next;  /* every buffer ever made: the exit flush walks them */
  _Atomic int state;  /* 0 in use by a thread, 1 free for the next thread */
  _Atomic size_t len; /* records written (each one whole before len moves) */
  uint8_t thread;     /* the trace's thread number */
  struct trace_rec rec[];
};

static char path_prefix[PATH_MAX - 16];
static _Atomic int trace_fd = -1;
static _Atomic uint64_t seq;
static _Atomic unsigned next_thread;
static _Atomic(struct tbuf *) all_bufs;
static pthread_key_t exit_key;
static __thread struct tbuf *my_buf __attribute__((tls_model("initial-exec")));
static __thread int in_setup __attribute__((tls_model("initial-exec")));

static void say(const char *msg) {
  ssize_t r = write(2, msg, strlen(msg));
  (void)r;
}

static void write_all(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* a full disk loses the rest of the trace, nothing else */
    b += w;
    n -= (size_t)w;
  }
}

/* Opens prefix.<pid> and writes its header; returns the descriptor or -1. */
static int open_trace(void) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s.%ld", path_prefix, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof path) return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    say("vigil-trace: cannot create the trace file (VIGIL_TRACE); recording nothing\n");
    return -1;
  }
  struct trace_header h = {TRACE_MAGIC, sizeof(struct trace_rec), (uint32_t)getpid()};
  write_all(fd, &h, sizeof h);
  return fd;
}

static void flush(struct tbuf *b) {
  size_t n = atomic_load_explicit(&b->len, memory_order_acquire);
  int fd = atomic_load_explicit(&trace_fd, memory_order_relaxed);
  if (n == 0) return;
  if (fd >= 0) write_all(fd, b->rec, n * sizeof b->rec[0]);
  atomic_store_explicit(&b->len, 0, memory_order_release);
}

static void thread_done(void *arg) {
  struct tbuf *b = arg;
  flush(b);
  my_buf = NULL;
  atomic_store_explicit(&b->state, 1, memory_order_release);
}

/* This thread's buffer: a free one left by an exited thread, or a new one. */
static struct tbuf *get_buf(void) {
  if (my_buf) return my_buf;
  if (in_setup) return NULL;
  in_setup = 1;
  struct tbuf *b;
  for (b = atomic_load(&all_bufs); b; b = b->next) {
    int one = 1;
    if (atomic_compare_exchange_strong(&b->state, &one, 0)) break;
  }
  if (b == NULL) {
    void *m = mmap(NULL, sizeof *b + BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      in_setup = 0;
      return NULL;
    }
    b = m;
    b->next = atomic_load(&all_bufs);
    while (!atomic_compare_exchange_weak(&all_bufs, &b->next, b)) {
    }
  }
  b->thread = (uint8_t)atomic_fetch_add(&next_thread, 1);
  my_buf = b;
  (void)pthread_setspecific(exit_key, b); /* may allocate: in_setup stops the recursion */
  in_setup = 0;
  return b;
}

/* One record.  seq is taken by the caller (see the header comment). */
static void record(uint64_t s, unsigned op, const void *ptr, const void *ret, size_t size, size_t arg) {
  if (atomic_load_explicit(&trace_fd, memory_order_relaxed) < 0) return;
  struct tbuf *b = get_buf();
  if (b == NULL) return;
  size_t n = atomic_load_explicit(&b->len, memory_order_relaxed);
  b->rec[n] = (struct trace_rec){.seq = s,
                                 .op = (uint8_t)op,
                                 .thread = b->thread,
                                 .check = TRACE_CHECK,
                                 .ptr = (uint64_t)(uintptr_t)ptr,
                                 .ret = (uint64_t)(uintptr_t)ret,
                                 .size = (uint64_t)size,
                                 .arg = (uint64_t)arg};
  atomic_store_explicit(&b->len, n + 1, memory_order_release);
  if (n + 1 == BUF_RECS) flush(b);
}

static uint64_t next_seq(void) {
  return atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed);
}

static void before_fork(void) {
  record(next_seq(), TR_FORK, NULL, NULL, 0, 0);
  if (my_buf) flush(my_buf); /* so the parent's file has everything up to the fork */
}

static void in_child(void) {
  /* One thread now: every buffer is the parent's to write. */
  for (struct tbuf *b = atomic_load(&all_bufs); b; b = b->next) {
    atomic_store(&b->len, 0);
    if (b != my_buf) atomic_store(&b->state, 1);
  }
  int old = atomic_load(&trace_fd);
  if (old >= 0) {
    close(old);
    atomic_store(&trace_fd, open_trace());
  }
}

static void at_exit(void) {
  /* Other threads may still run: each buffer is written as it stands, and
   * a record written twice is dropped by its sequence number. */
  for (struct tbuf *b = atomic_load(&all_bufs); b; b = b->next) flush(b);
}

__attribute__((constructor)) static void trace_init(void) {
  const char *p = getenv("VIGIL_TRACE");
  if (p == NULL || *p == 0) return;
  if (strlen(p) >= sizeof path_prefix) {
    say("vigil-trace: VIGIL_TRACE is too long a path; recording nothing\n");
    return;
  }
  strcpy(path_prefix, p);
  if (pthread_key_create(&exit_key, thread_done) != 0) {
    say("vigil-trace: no thread key left; recording nothing\n");
    return;
  }
  pthread_atfork(before_fork, NULL, in_child);
  atexit(at_exit);
  atomic_store(&trace_fd, open_trace());
}

/* ---- the malloc family -------------------------------------------------- */

EXPORT void *malloc(size_t n) {
  void *r = vigil_malloc(n);
  record(next_seq(), TR_MALLOC, NULL, r, n, 0);
  return r;
}
EXPORT void free(void *p) {
  if (p) record(next_seq(), TR_FREE, p, NULL, 0, 0);
  vigil_free(p);
}
EXPORT void *calloc(size_t nmemb, size_t n) {
  void *r = vigil_calloc(nmemb, n);
  record(next_seq(), TR_CALLOC, NULL, r, n, nmemb);
  return r;
}
/* The sequence number is taken before the call, as for free: no other
 * thread's malloc of the old address can come before it in the order. */
EXPORT void *realloc(void *p, size_t n) {
  uint64_t s = next_seq();
  void *r = vigil_realloc(p, n);
  record(s, TR_REALLOC, p, r, n, 0);
  return r;
}
EXPORT void *reallocarray(void *p, size_t nmemb, size_t n) {
  uint64_t s = next_seq();
  void *r = vigil_reallocarray(p, nmemb, n);
  record(s, TR_REALLOCARRAY, p, r, n, nmemb);
  return r;
}
EXPORT void *memalign(size_t a, size_t n) {
  void *r = vigil_memalign(a, n);
  record(next_seq(), TR_MEMALIGN, NULL, r, n, a);
  return r;
}
EXPORT void *aligned_alloc(size_t a, size_t n) {
  void *r = vigil_aligned_alloc(a, n);
  record(next_seq(), TR_ALIGNED_ALLOC, NULL, r, n, a);
  return r;
}
EXPORT int posix_memalign(void **out, size_t a, size_t n) {
  int e = vigil_posix_memalign(out, a, n);
  record(next_seq(), TR_POSIX_MEMALIGN, NULL, e ? NULL : *out, n, a);
  return e;
}
EXPORT void *valloc(size_t n) {
  void *r = vigil_valloc(n);
  record(next_seq(), TR_VALLOC, NULL, r, n, 0);
  return r;
}
EXPORT void *pvalloc(size_t n) {
  void *r = vigil_pvalloc(n);
  record(next_seq(), TR_PVALLOC, NULL, r, n, 0);
  return r;
}
EXPORT size_t malloc_usable_size(void *p) {
  size_t u = vigil_malloc_usable_size(p);
  if (p) record(next_seq(), TR_USABLE, p, NULL, u, 0);
  return u;
}
EXPORT int malloc_trim(size_t pad) {
  record(next_seq(), TR_TRIM, NULL, NULL, pad, 0);
  return vigil_malloc_trim(pad);
}
/* Not recorded: they change no block. */
EXPORT int mallopt(int param, int value) { return vigil_mallopt(param, value); }
EXPORT struct mallinfo2 mallinfo2(void) { return vigil_mallinfo2(); }
EXPORT struct mallinfo mallinfo(void) { return vigil_mallinfo(); }
EXPORT int malloc_info(int options, FILE *fp) { return vigil_malloc_info(options, fp); }
EXPORT void malloc_stats(void) { vigil_malloc_stats(); }
