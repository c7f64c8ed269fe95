/* Block history for ASan's reports (the prefixed build compiled with ASan:
 * the libFuzzer targets, `make triage`'s ASan row).
 *
 * vigil poisons free slots and block tails for ASan (annotate.h), so a
 * use-after-free or an overflow inside vigil's heap stops the program with
 * ASan's "use-after-poison" report.  ASan keeps allocation and free stacks
 * only for memory its own allocator handed out; for vigil's blocks its
 * report has the access's stack alone.  So vigil keeps them: each malloc,
 * realloc and free records its stack (a frame-pointer walk, about 8 loads,
 * bounded by the thread's stack) in a direct-mapped table keyed by the
 * block's address, and ASan's __asan_on_error hook, called just before
 * ASan prints its report, prints what the table knows about the reported
 * address: the block it lies in or just after, whether that block is live
 * or freed, and the stacks of its allocation and of its free.
 *
 * The table forgets: a block whose entry was taken by a later block with
 * the same hash has no history ("no record").  An entry is written under a
 * per-entry sequence number (odd while a writer is in it); a second writer
 * skips rather than waits, and the reader copies an entry and keeps it only
 * if the number was even and unchanged.  Nothing here allocates.
 *
 * In every other build this file is empty. */
#include "internal.h"

#ifdef VG_ASAN
#include <sanitizer/common_interface_defs.h>

#define FRAMES 8
#define ENTRIES 8192 /* a power of two */

struct hist {
  _Atomic unsigned seq;
  bool freed;
  uintptr_t block, n, usable;
  uintptr_t alloc_pc[FRAMES], free_pc[FRAMES];
};
static struct hist table[ENTRIES];
static __thread uintptr_t tl_stack_lo, tl_stack_hi;

static struct hist *slot_for(uintptr_t p) { return &table[(p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - 13)]; }

/* The return addresses of this thread's frames, from the entry point's up;
 * 0 after the last.  Each frame pointer is
 * checked to lie in the thread's stack, above the previous one, so a frame
 * without one (libc's) ends the walk without a wild load. */
__attribute__((no_sanitize("address", "undefined"))) static NOINLINE void capture(uintptr_t pc[FRAMES]) {
  if (unlikely(tl_stack_hi == 0)) vg_os_stack_bounds(&tl_stack_lo, &tl_stack_hi);
  /* From the frame of vg_hist_*'s caller: the entry point's. */
  const uintptr_t *fp = __builtin_frame_address(0);
  int i = 0;
  if ((uintptr_t)fp >= tl_stack_lo && (uintptr_t)fp + 2 * sizeof(uintptr_t) <= tl_stack_hi)
    fp = (const uintptr_t *)fp[0];
  while (i < FRAMES && (uintptr_t)fp >= tl_stack_lo && (uintptr_t)fp + 2 * sizeof(uintptr_t) <= tl_stack_hi &&
         (uintptr_t)fp % sizeof(uintptr_t) == 0) {
    uintptr_t ret = fp[1];
    const uintptr_t *up = (const uintptr_t *)fp[0];
    if (ret == 0) break;
    pc[i++] = ret;
    if (up <= fp) break;
    fp = up;
  }
  while (i < FRAMES) pc[i++] = 0;
}

static struct hist *enter(uintptr_t p) {
  struct hist *h = slot_for(p);
  unsigned s = load_relaxed(&h->seq);
  if ((s & 1) || !atomic_compare_exchange_strong_explicit(&h->seq, &s, s + 1, memory_order_acquire,
                                                          memory_order_relaxed))
    return NULL; /* another thread is writing it: this record is lost */
  return h;
}
static void leave(struct hist *h) { atomic_fetch_add_explicit(&h->seq, 1, memory_order_release); }

void vg_hist_alloc(void *p, size_t n, size_t usable) {
  struct hist *h = enter((uintptr_t)p);
  if (h == NULL) return;
  h->block = (uintptr_t)p, h->n = n, h->usable = usable, h->freed = false;
  capture(h->alloc_pc);
  h->free_pc[0] = 0;
  leave(h);
}

void vg_hist_free(void *p) {
  struct hist *h = enter((uintptr_t)p);
  if (h == NULL) return;
  if (h->block != (uintptr_t)p) { /* allocated before its record was taken */
    h->block = (uintptr_t)p, h->n = h->usable = 0;
    h->alloc_pc[0] = 0;
  }
  h->freed = true;
  capture(h->free_pc);
  leave(h);
}

/* ---- the report --------------------------------------------------------- */

static void put(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  vg_os_write_err(s, n);
}
static void put_num(uintptr_t v, unsigned base) {
  char buf[24];
  int i = sizeof buf;
  do buf[--i] = "0123456789abcdef"[v % base];
  while ((v /= base) != 0 && i > 0);
  vg_os_write_err(buf + i, sizeof buf - (size_t)i);
}

static void put_stack(const uintptr_t pc[FRAMES]) {
  if (pc[0] == 0) {
    put("    (no record)\n");
    return;
  }
  for (int i = 0; i < FRAMES && pc[i] != 0; i++) {
    char line[512];
    /* pc - 1: the call instruction, not the one after it. */
    __sanitizer_symbolize_pc((void *)(pc[i] - 1), "%p in %f %s:%l", line, sizeof line);
    put("    #"), put_num((uintptr_t)i, 10), put(" "), put(line), put("\n");
  }
}

/* The consistent copy of an entry that covers addr (the block it lies in,
 * or the nearest one that ends at most a slot's width below it). */
static bool find(uintptr_t addr, struct hist *out) {
  bool found = false;
  uintptr_t best = UINTPTR_MAX;
  for (size_t i = 0; i < ENTRIES; i++) {
    struct hist *h = &table[i];
    unsigned s = atomic_load_explicit(&h->seq, memory_order_acquire);
    if (s & 1) continue;
    struct hist c;
    __builtin_memcpy(&c, h, sizeof c);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&h->seq, memory_order_relaxed) != s || c.block == 0 || addr < c.block) continue;
    size_t span = c.usable > c.n ? c.usable : c.n;
    uintptr_t dist = addr < c.block + span ? 0 : addr - (c.block + span) + 1;
    if (dist > 4096) continue;
    if (dist < best || (dist == best && c.block > out->block)) best = dist, *out = c, found = true;
  }
  return found;
}

/* ASan calls this (a weak hook) after it has found an error, right before
 * it prints the report. */
__attribute__((visibility("default"))) void __asan_on_error(void) {
  uintptr_t addr = (uintptr_t)__asan_get_report_address();
  struct hist c;
  if (addr == 0 || !find(addr, &c)) return;
  put("vigil: 0x"), put_num(addr, 16);
  if (addr < c.block + c.n) put(" is "), put_num(addr - c.block, 10), put(" bytes inside");
  else put(" is "), put_num(addr - (c.block + c.n), 10), put(" bytes after");
  put(c.freed ? " the freed " : " the live ");
  if (c.alloc_pc[0] != 0) put_num(c.n, 10), put("-byte ");
  put("block at 0x"), put_num(c.block, 16);
  put(" (vigil's history of it; ASan's report follows)\n");
  if (c.freed) put("vigil: freed at:\n"), put_stack(c.free_pc);
  put("vigil: allocated at:\n"), put_stack(c.alloc_pc);
}
#endif
