/* The reference model (see model.h).  Deliberately simple: a table of live
 * blocks and linear checks. */
#include "model.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Counted only once model_count_bytes has been called (replay -b), before
 * any program runs: the fuzzers' fills and checks take no shared atomic.
 * Relaxed: they count, they order nothing. */
static int counting;
static _Atomic uint64_t bytes_filled, bytes_checked;

void model_count_bytes(void) { counting = 1; }

void model_bytes(uint64_t *filled, uint64_t *checked) {
  *filled = atomic_load_explicit(&bytes_filled, memory_order_relaxed);
  *checked = atomic_load_explicit(&bytes_checked, memory_order_relaxed);
}

void model_init(struct model *m) {
  memset(m->slot, 0, sizeof m->slot);
  memset(m->mailbox, 0, sizeof m->mailbox);
  memset(&m->pages, 0, sizeof m->pages);
  m->live[0] = m->live[1] = 0;
  pthread_mutex_init(&m->lock, NULL);
}

/* A block's bytes [lo, hi): a zero-sized one still has an address. */
static void extent(const struct mblock *b, uintptr_t *lo, uintptr_t *hi) {
  *lo = (uintptr_t)b->p;
  *hi = *lo + (b->usable ? b->usable : 1);
}

_Static_assert(PROG_SLOTS <= 64 && PROG_MAILBOXES <= 64, "a word of live bits per table");

/* The table (0: slot, 1: mailbox) and index of an entry. */
static unsigned table_of(const struct model *m, const struct mblock *e, unsigned *i) {
  uintptr_t a = (uintptr_t)e, s0 = (uintptr_t)m->slot;
  int in_slots = a >= s0 && a < s0 + sizeof m->slot;
  *i = (unsigned)((a - (in_slots ? s0 : (uintptr_t)m->mailbox)) / sizeof *e);
  return !in_slots;
}

static void mark(struct model *m, const struct mblock *e, int live) {
  unsigned i, t = table_of(m, e, &i);
  if (live) m->live[t] |= (uint64_t)1 << i;
  else m->live[t] &= ~((uint64_t)1 << i);
}

const char *model_add(struct model *m, struct mblock *where, const struct mblock *b) {
  static __thread char why[160];
  if (((uintptr_t)b->p % 16) != 0) return "not 16-byte aligned";
  if (b->align > 1 && ((uintptr_t)b->p % b->align) != 0) {
    snprintf(why, sizeof why, "not aligned to %zu", b->align);
    return why;
  }
  if (b->usable < b->req) {
    snprintf(why, sizeof why, "usable size %zu below the request %zu", b->usable, b->req);
    return why;
  }
  pthread_mutex_lock(&m->lock);
  const char *bad = NULL;
  unsigned wi, wt = table_of(m, where, &wi);
  uintptr_t b0, b1;
  extent(b, &b0, &b1);
  for (unsigned pass = 0; pass < 2 && !bad; pass++) {
    const struct mblock *t = pass ? m->mailbox : m->slot;
    uint64_t bits = m->live[pass] & ~(pass == wt ? (uint64_t)1 << wi : 0);
    for (; bits && !bad; bits &= bits - 1) {
      unsigned i = (unsigned)__builtin_ctzll(bits);
      uintptr_t a0, a1;
      extent(&t[i], &a0, &a1);
      if (t[i].p && a0 < b1 && b0 < a1) {
        snprintf(why, sizeof why, "overlaps the live block %p (+%zu) of %s %u", (void *)t[i].p, t[i].usable,
                 pass ? "mailbox" : "slot", i);
        bad = why;
      }
    }
  }
  if (!bad) {
    if (where->p) cost_pages_account(&m->pages, where, -1);
    *where = *b;
    mark(m, where, 1);
    cost_pages_account(&m->pages, b, 1);
  }
  pthread_mutex_unlock(&m->lock);
  return bad;
}

struct mblock model_take(struct model *m, struct mblock *where) {
  pthread_mutex_lock(&m->lock);
  struct mblock b = *where;
  memset(where, 0, sizeof *where);
  mark(m, where, 0);
  if (b.p) cost_pages_account(&m->pages, &b, -1);
  pthread_mutex_unlock(&m->lock);
  return b;
}

void model_move_locked(struct model *m, struct mblock *to, struct mblock *from) {
  *to = *from;
  from->p = NULL;
  mark(m, to, 1);
  mark(m, from, 0);
}

/* The index of the first byte of p[0, n) that is not `want`, or n.  All n
 * bytes are `want` when the first is and each equals the next: one memcmp of
 * the block against itself shifted by a byte (libc's is vectorised; a byte
 * loop here was 85% of the instructions of the api seeds that fill spans,
 * and filling a reference page whenever the byte changed, 33% of the
 * options seeds').  The byte loop only finds where a failing check failed. */
static size_t first_other(const unsigned char *p, size_t n, unsigned char want) {
  if (n == 0) return 0;
  if (p[0] == want && memcmp(p, p + 1, n - 1) == 0) return n;
  size_t i = 0;
  while (i < n && p[i] == want) i++;
  return i;
}

const char *model_verify(const struct mblock *b) {
  static __thread char why[160];
  if (!b->p || b->content == C_UNKNOWN) return NULL;
  unsigned char want = b->content == C_ZERO ? 0 : b->fill;
  size_t n = b->valid < MODEL_CHECK_MAX ? b->valid : MODEL_CHECK_MAX;
  if (counting) atomic_fetch_add_explicit(&bytes_checked, n, memory_order_relaxed);
  size_t i = first_other(b->p, n, want);
  if (i == n) return NULL;
  snprintf(why, sizeof why, "byte %zu of %p is 0x%02x, want 0x%02x (%s)", i, (void *)b->p, b->p[i], want,
           b->content == C_ZERO ? "zeroed" : "filled");
  return why;
}

void model_fill(struct mblock *b, unsigned char byte) {
  size_t n = b->req < MODEL_CHECK_MAX ? b->req : MODEL_CHECK_MAX;
  memset(b->p, byte, n);
  if (counting) atomic_fetch_add_explicit(&bytes_filled, n, memory_order_relaxed);
  b->content = C_FILL;
  b->fill = byte;
  b->valid = n;
}
