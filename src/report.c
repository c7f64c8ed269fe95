/* The fatal path.  One noreturn reporter with a fixed message per violation.
 * glibc's malloc_printerr once called backtrace(), which called malloc, and
 * deadlocked or recursed on a corrupt heap (seed 000).  This path therefore:
 * never allocates, takes no allocator lock, writes with write(2) only, marks
 * the heap unusable, and aborts. */
#include <stdlib.h>

#include "internal.h"

_Atomic int vg_unusable;

static const char *const messages[V_COUNT] = {
    [V_DOUBLE_FREE] = "double free",
    [V_INVALID_POINTER] = "invalid pointer",
    [V_CORRUPT_FREELIST] = "corrupted free list",
    [V_CORRUPT_REMOTE] = "corrupted remote free list",
    [V_CORRUPT_METADATA] = "corrupted metadata",
    [V_CORRUPT_LARGE] = "corrupted large block",
    [V_LOCK_REENTERED] = "allocator re-entered from a signal handler",
    [V_USE_AFTER_FREE] = "use of a freed block",
    [V_WRONG_SIZE] = "free_sized with a size the block does not have",
    [V_WRONG_ALIGN] = "free_aligned_sized with a wrong alignment",
    [V_WRONG_DELETE_SIZE] = "sized delete with a size the block does not have",
    [V_WRONG_DELETE_ALIGN] = "aligned delete with a wrong alignment",
    [V_NO_CXX_RUNTIME] = "operator new failed with no C++ runtime to throw",
    [V_OVERFLOW] = "overflow past the end of a block",
    [V_WRITE_AFTER_FREE] = "write to a freed block",
};

_Noreturn void vg_fatal(enum violation v, const void *p) {
  /* The first reporter writes; a second one (another thread, or a handler
   * that frees during abort) just aborts. */
  if (atomic_exchange_explicit(&vg_unusable, 1, memory_order_acq_rel) == 0) {
    char buf[96] = "vigil: ";
    size_t n = 7;
    const char *m = messages[v < V_COUNT ? v : V_CORRUPT_METADATA];
    while (*m) buf[n++] = *m++;
    const char *at = " at 0x";
    while (*at) buf[n++] = *at++;
    uintptr_t a = (uintptr_t)p;
    for (int sh = (int)sizeof a * 8 - 4; sh >= 0; sh -= 4) buf[n++] = "0123456789abcdef"[(a >> sh) & 15];
    buf[n++] = '\n';
    vg_os_write_err(buf, n);
  }
  abort();
}
