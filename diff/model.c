/* The reference model (see model.h).  Deliberately simple: a table of live
 * blocks and linear checks. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void model_init(struct model *m) {
  memset(m->slot, 0, sizeof m->slot);
  memset(m->mailbox, 0, sizeof m->mailbox);
  memset(&m->pages, 0, sizeof m->pages);
  pthread_mutex_init(&m->lock, NULL);
}

static int overlaps(const struct mblock *a, const struct mblock *b) {
  uintptr_t a0 = (uintptr_t)a->p, a1 = a0 + (a->usable ? a->usable : 1);
  uintptr_t b0 = (uintptr_t)b->p, b1 = b0 + (b->usable ? b->usable : 1);
  return a0 < b1 && b0 < a1;
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
  for (int pass = 0; pass < 2 && !bad; pass++) {
    struct mblock *t = pass ? m->mailbox : m->slot;
    int n = pass ? PROG_MAILBOXES : PROG_SLOTS;
    for (int i = 0; i < n && !bad; i++)
      if (t[i].p && &t[i] != where && overlaps(&t[i], b)) {
        snprintf(why, sizeof why, "overlaps the live block %p (+%zu) of %s %d", (void *)t[i].p, t[i].usable,
                 pass ? "mailbox" : "slot", i);
        bad = why;
      }
  }
  if (!bad) {
    if (where->p) cost_pages_account(&m->pages, where, -1);
    *where = *b;
    cost_pages_account(&m->pages, b, 1);
  }
  pthread_mutex_unlock(&m->lock);
  return bad;
}

struct mblock model_take(struct model *m, struct mblock *where) {
  pthread_mutex_lock(&m->lock);
  struct mblock b = *where;
  memset(where, 0, sizeof *where);
  if (b.p) cost_pages_account(&m->pages, &b, -1);
  pthread_mutex_unlock(&m->lock);
  return b;
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
  size_t i = first_other(b->p, n, want);
  if (i == n) return NULL;
  snprintf(why, sizeof why, "byte %zu of %p is 0x%02x, want 0x%02x (%s)", i, (void *)b->p, b->p[i], want,
           b->content == C_ZERO ? "zeroed" : "filled");
  return why;
}

void model_fill(struct mblock *b, unsigned char byte) {
  size_t n = b->req < MODEL_CHECK_MAX ? b->req : MODEL_CHECK_MAX;
  memset(b->p, byte, n);
  b->content = C_FILL;
  b->fill = byte;
  b->valid = n;
}
