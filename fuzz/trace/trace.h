/* The trace file of fuzz/trace/rec.c, read by fuzz/trace/trace2ops.py. */
#ifndef VIGIL_TRACE_H
#define VIGIL_TRACE_H

#include <stdint.h>

#define TRACE_MAGIC 0x3145434152544756ull /* "VGTRACE1" as a little-endian word */
#define TRACE_CHECK 0xa5                 /* in every record: a torn file is seen */

enum trace_op {
  TR_MALLOC = 1,      /* ret = malloc(size) */
  TR_FREE,            /* free(ptr) */
  TR_CALLOC,          /* ret = calloc(arg, size) */
  TR_REALLOC,         /* ret = realloc(ptr, size) */
  TR_REALLOCARRAY,    /* ret = reallocarray(ptr, arg, size) */
  TR_MEMALIGN,        /* ret = memalign(arg, size) */
  TR_ALIGNED_ALLOC,   /* ret = aligned_alloc(arg, size) */
  TR_POSIX_MEMALIGN,  /* posix_memalign(&ret, arg, size); ret 0 on failure */
  TR_VALLOC,          /* ret = valloc(size) */
  TR_PVALLOC,         /* ret = pvalloc(size) */
  TR_USABLE,          /* size = malloc_usable_size(ptr) */
  TR_TRIM,            /* malloc_trim(size) */
  TR_FORK,            /* the process forked (the child's trace is its own file) */
};

struct trace_header {
  uint64_t magic;
  uint32_t rec_size; /* sizeof(struct trace_rec) */
  uint32_t pid;
};

struct trace_rec {
  uint64_t seq;    /* process-wide order */
  uint8_t op;      /* enum trace_op */
  uint8_t thread;  /* 0 for the first thread that allocated, then in order */
  uint8_t check;   /* TRACE_CHECK */
  uint8_t pad[5];
  uint64_t ptr;    /* the block passed in (free, realloc, usable) */
  uint64_t ret;    /* the block returned; 0 for NULL */
  uint64_t size;
  uint64_t arg;    /* nmemb, or the alignment */
};

_Static_assert(sizeof(struct trace_rec) == 48, "the converter reads 48-byte records");

#endif
