/* C++'s operator new and delete, every form, without C++ (issue 10).
 *
 * Exported from the standard build under their Itanium ABI names, so that a
 * C++ program linked with or preloading vigil gets its blocks from vigil,
 * and so that a sized or aligned delete is checked: the size must be one
 * the block can have been asked with, the alignment one it has (api.c's
 * check_sized; a mismatch is fatal with its own message).
 *
 * new follows the standard: on failure it calls the current new_handler
 * until the allocation succeeds, and throws std::bad_alloc when there is
 * none.  Both come from the C++ runtime (libstdc++), referenced weakly: a
 * C program never calls these, and a C++ program has the runtime loaded.
 * The exception passes through this file's frames, which is why it is
 * compiled with -fexceptions (Makefile).  Limit: the nothrow forms cannot
 * catch a bad_alloc that the new_handler itself throws (that needs C++),
 * so it escapes them; with no handler they return NULL, as they must.
 *
 * The prefixed build exports only vigil_ names: nothing here. */
#include "internal.h"

#ifndef VIGIL_PREFIX
#include <errno.h>

#include "vigil.h"

#if SIZE_MAX == 0xffffffffu
#define SZ "j" /* size_t is unsigned int */
#else
#define SZ "m" /* unsigned long */
#endif
#define NOTHROW "RKSt9nothrow_t"
#define ALIGN "St11align_val_t"
#define CXX(name) __asm__(name) __attribute__((visibility("default")))

typedef void (*vg_new_handler)(void);
extern vg_new_handler vg_cxx_get_new_handler(void) __asm__("_ZSt15get_new_handlerv") __attribute__((weak));
extern void vg_cxx_throw_bad_alloc(void) __asm__("_ZSt17__throw_bad_allocv") __attribute__((weak, noreturn));

/* align 0: plain new.  nothrow: NULL instead of bad_alloc. */
static void *cxx_new(size_t n, size_t align, bool nothrow) {
  for (;;) {
    void *p = align ? vigil_aligned_alloc(align, n) : vigil_malloc(n);
    if (p != NULL) return p;
    vg_new_handler h = vg_cxx_get_new_handler ? vg_cxx_get_new_handler() : NULL;
    if (h == NULL) {
      if (nothrow) return NULL;
      if (vg_cxx_throw_bad_alloc) vg_cxx_throw_bad_alloc();
      errno = ENOMEM;
      vg_fatal(V_NO_CXX_RUNTIME, NULL);
    }
    h();
  }
}

void *vg_cxx_new(size_t n) CXX("_Znw" SZ);
void *vg_cxx_new(size_t n) { return cxx_new(n, 0, false); }
void *vg_cxx_new_array(size_t n) CXX("_Zna" SZ);
void *vg_cxx_new_array(size_t n) { return cxx_new(n, 0, false); }
void *vg_cxx_new_nothrow(size_t n, const void *tag) CXX("_Znw" SZ NOTHROW);
void *vg_cxx_new_nothrow(size_t n, const void *tag) { return (void)tag, cxx_new(n, 0, true); }
void *vg_cxx_new_array_nothrow(size_t n, const void *tag) CXX("_Zna" SZ NOTHROW);
void *vg_cxx_new_array_nothrow(size_t n, const void *tag) { return (void)tag, cxx_new(n, 0, true); }
void *vg_cxx_new_aligned(size_t n, size_t al) CXX("_Znw" SZ ALIGN);
void *vg_cxx_new_aligned(size_t n, size_t al) { return cxx_new(n, al, false); }
void *vg_cxx_new_array_aligned(size_t n, size_t al) CXX("_Zna" SZ ALIGN);
void *vg_cxx_new_array_aligned(size_t n, size_t al) { return cxx_new(n, al, false); }
void *vg_cxx_new_aligned_nothrow(size_t n, size_t al, const void *tag) CXX("_Znw" SZ ALIGN NOTHROW);
void *vg_cxx_new_aligned_nothrow(size_t n, size_t al, const void *tag) { return (void)tag, cxx_new(n, al, true); }
void *vg_cxx_new_array_aligned_nothrow(size_t n, size_t al, const void *tag) CXX("_Zna" SZ ALIGN NOTHROW);
void *vg_cxx_new_array_aligned_nothrow(size_t n, size_t al, const void *tag) { return (void)tag, cxx_new(n, al, true); }

void vg_cxx_delete(void *p) CXX("_ZdlPv");
void vg_cxx_delete(void *p) { vigil_free(p); }
void vg_cxx_delete_array(void *p) CXX("_ZdaPv");
void vg_cxx_delete_array(void *p) { vigil_free(p); }
void vg_cxx_delete_nothrow(void *p, const void *tag) CXX("_ZdlPv" NOTHROW);
void vg_cxx_delete_nothrow(void *p, const void *tag) { (void)tag, vigil_free(p); }
void vg_cxx_delete_array_nothrow(void *p, const void *tag) CXX("_ZdaPv" NOTHROW);
void vg_cxx_delete_array_nothrow(void *p, const void *tag) { (void)tag, vigil_free(p); }
void vg_cxx_delete_sized(void *p, size_t n) CXX("_ZdlPv" SZ);
void vg_cxx_delete_sized(void *p, size_t n) { vg_free_checked(p, n, 1, true); }
void vg_cxx_delete_array_sized(void *p, size_t n) CXX("_ZdaPv" SZ);
void vg_cxx_delete_array_sized(void *p, size_t n) { vg_free_checked(p, n, 1, true); }
void vg_cxx_delete_aligned(void *p, size_t al) CXX("_ZdlPv" ALIGN);
void vg_cxx_delete_aligned(void *p, size_t al) { vg_free_checked(p, VG_ANY_SIZE, al, true); }
void vg_cxx_delete_array_aligned(void *p, size_t al) CXX("_ZdaPv" ALIGN);
void vg_cxx_delete_array_aligned(void *p, size_t al) { vg_free_checked(p, VG_ANY_SIZE, al, true); }
void vg_cxx_delete_sized_aligned(void *p, size_t n, size_t al) CXX("_ZdlPv" SZ ALIGN);
void vg_cxx_delete_sized_aligned(void *p, size_t n, size_t al) { vg_free_checked(p, n, al, true); }
void vg_cxx_delete_array_sized_aligned(void *p, size_t n, size_t al) CXX("_ZdaPv" SZ ALIGN);
void vg_cxx_delete_array_sized_aligned(void *p, size_t n, size_t al) { vg_free_checked(p, n, al, true); }
void vg_cxx_delete_aligned_nothrow(void *p, size_t al, const void *tag) CXX("_ZdlPv" ALIGN NOTHROW);
void vg_cxx_delete_aligned_nothrow(void *p, size_t al, const void *tag) {
  (void)tag, vg_free_checked(p, VG_ANY_SIZE, al, true);
}
void vg_cxx_delete_array_aligned_nothrow(void *p, size_t al, const void *tag) CXX("_ZdaPv" ALIGN NOTHROW);
void vg_cxx_delete_array_aligned_nothrow(void *p, size_t al, const void *tag) {
  (void)tag, vg_free_checked(p, VG_ANY_SIZE, al, true);
}
#endif
