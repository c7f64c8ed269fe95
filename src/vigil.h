/* vigil: a hardened drop-in malloc for Linux.  Public API.
 *
 * The shared library and libvigil.a export the standard names (malloc, free,
 * ...).  libvigil_prefixed.a exports the same functions as vigil_malloc,
 * vigil_free, ... and no standard name, so it can live in one process next to
 * glibc's malloc or a sanitizer's.  Code that wants to call vigil explicitly
 * in either build uses the vigil_ names through VIGIL_NAME(). */
#ifndef VIGIL_H
#define VIGIL_H

#include <malloc.h>
#include <stddef.h>
#include <stdio.h>

#ifdef VIGIL_PREFIX
#define VIGIL_NAME(n) vigil_##n
#else
#define VIGIL_NAME(n) n
#endif

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

void *vigil_malloc(size_t size);
void vigil_free(void *ptr);
void *vigil_calloc(size_t nmemb, size_t size);
void *vigil_realloc(void *ptr, size_t size);
void *vigil_reallocarray(void *ptr, size_t nmemb, size_t size);
void *vigil_memalign(size_t alignment, size_t size);
void *vigil_aligned_alloc(size_t alignment, size_t size);
int vigil_posix_memalign(void **memptr, size_t alignment, size_t size);
void *vigil_valloc(size_t size);
void *vigil_pvalloc(size_t size);
size_t vigil_malloc_usable_size(void *ptr);
/* C23: free with the size (and alignment) the block was asked with. */
void vigil_free_sized(void *ptr, size_t size);
void vigil_free_aligned_sized(void *ptr, size_t alignment, size_t size);
int vigil_malloc_trim(size_t pad);
int vigil_mallopt(int param, int value);
struct mallinfo2 vigil_mallinfo2(void);
struct mallinfo vigil_mallinfo(void);
int vigil_malloc_info(int options, FILE *fp);
void vigil_malloc_stats(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
