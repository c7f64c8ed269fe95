/* The hardening levels above the base (the `harden` tunable, read once at
 * start-up; README's Hardening section has their measured cost):
 *
 *   1 canary      a small block gets VG_CANARY_ROOM more bytes than asked.
 *                 Right after the n bytes asked for comes a canary: a
 *                 non-zero secret byte, a zero byte (the terminator a string
 *                 one byte too long relies on is still there, past the
 *                 canary), then secret bytes up to 8 in all, as room allows.
 *                 The slot's last two bytes hold n, keyed.  free, realloc and
 *                 malloc_usable_size check both, so a 1-byte overflow (a NUL)
 *                 is fatal at the next call, and malloc(0)'s block traps a
 *                 write to its first byte.  malloc_usable_size is n.
 *                 Reuse is delayed: the thread cache holds its newest
 *                 VG_QFIFO_CANARY blocks back (harden.h); bigger blocks and
 *                 spans go through the quarantine below, a FIFO of
 *                 VG_QFIFO_CANARY with no pool.  The 4 newest cached large
 *                 mappings are not reused (large.c).
 *   2 quarantine  + freed small blocks and spans wait in a per-thread
 *                 quarantine before their memory can be handed out again: a
 *                 FIFO of VG_QFIFO blocks, then a random-replacement pool
 *                 of VG_QPOOL, bounded in bytes by the `quarantine` tunable;
 *                 then the thread cache, as at level 0.
 *                 A quarantined block keeps its allocation bit and carries
 *                 the remote tag (heap.h), a span is marked held: a second
 *                 free of either is a double free, however many mallocs came
 *                 between.  Freed large blocks are unmapped behind a
 *                 PROT_NONE reservation that is released late (large.c).
 *                 Each run of small pages is claimed with a PROT_NONE guard
 *                 page after it (guard slabs, arena.c).
 *   3 fill        + a quarantined block is zeroed past its tag, and
 *                 checked when it leaves: a write after free is fatal.
 *
 * The sanitizer and Valgrind builds (VG_ANNOTATE) run at level 0: the
 * checkers see every byte themselves, and vigil's own writes into freed
 * blocks would be their false reports. */
#include "harden.h"

void vg_harden_init(void) {
  size_t v = vg_option(OPT_harden);
  store_relaxed(&vg_ro.harden, VG_ANNOTATE ? 0 : (uint8_t)v); /* sealed by init.c */
}

/* ---- for the fuzzers (fuzz/corrupt.c) --------------------------------------
 * vg_harden_set changes the level in a process (or a forked child) whose
 * live blocks are none: every block is given its canary and checked at the
 * level in force.  Returns that level (0 in the annotated builds). */
unsigned vg_harden_set(unsigned level) {
  vg_init();
  struct heap *h = vg_tl_heap;
  if (h != NULL) {
    vg_quarantine_flush(h);
    vg_heap_tc_flush(h); /* its order (a FIFO at 1) is the level's */
    vg_heap_release_spares(h); /* the runs it takes next are the level's */
  }
  vg_ro_seal(false);
  store_relaxed(&vg_ro.harden, VG_ANNOTATE ? 0 : (uint8_t)(level > HARDEN_FILL ? HARDEN_FILL : level));
  vg_ro_seal(true);
  vg_registry_seal_level();
  if (h != NULL) vg_heap_tc_size(h);
  return harden_level();
}
bool vg_harden_canary_at(const void *p) {
  struct page *pg = page_of(p);
  return harden_level() && pg != NULL && pg->kind == PK_SMALL;
}
void vg_harden_release_mine(void) {
  if (vg_tl_heap != NULL) vg_quarantine_flush(vg_tl_heap);
}

/* ---- quarantine ---------------------------------------------------------- */

static inline uint64_t rng_next(struct heap *h) {
  uint64_t x = h->q_rng;
  if (x == 0) x = (uint64_t)vg_secret ^ (uint64_t)(uintptr_t)h ^ 0x2545F4914F6CDD1Dull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  h->q_rng = x;
  return x;
}

/* A quarantined block is filled past its first word, the tag. */
#define FILL_FROM sizeof(uintptr_t)

static bool fill_intact(const uint8_t *u, size_t n) {
  for (size_t i = FILL_FROM; i < n; i += sizeof(uintptr_t)) {
    uintptr_t w;
    memcpy(&w, u + i, sizeof w);
    if (w != 0) return false;
  }
  return true;
}

static void check(struct page *pg, void *p);

/* A block leaves the quarantine: checked, then freed for real.  Returns
 * the bytes it held. */
static size_t release(void *p) {
  struct page *pg = page_of(p);
  size_t size = pg->bsize;
  check(pg, p);
  if (pg->kind == PK_SPAN) {
    vg_span_unhold(pg);
    return size;
  }
  blk_store(&((struct block *)p)->next, 0); /* untagged: a block being freed */
  small_free(pg, p, V_CORRUPT_METADATA);      /* the thread cache, or its page */
  return size;
}

/* A random block of the pool, or the FIFO's oldest when the pool is
 * empty, leaves the quarantine (the caller releases it). */
static void *take_one(struct heap *h) {
  void *p;
  if (h->q_npool > 0) {
    unsigned i = (unsigned)(rng_next(h) % h->q_npool);
    p = h->q_pool[i];
    h->q_pool[i] = h->q_pool[--h->q_npool];
  } else {
    p = h->q_fifo[h->q_head];
    h->q_head = (h->q_head + 1) % VG_QFIFO;
    h->q_nfifo--;
  }
  return p;
}

/* Blocks held at each level: the FIFO's depth and the pool's size. */
static inline unsigned fifo_cap(void) { return harden_level() >= HARDEN_QUARANTINE ? VG_QFIFO : VG_QFIFO_CANARY; }
static inline unsigned pool_cap(void) { return harden_level() >= HARDEN_QUARANTINE ? VG_QPOOL : 0; }

/* free at level 1 and up, of a validated live small block or span. */
void vg_quarantine_put(struct heap *h, struct page *pg, void *p) {
  size_t size = pg->bsize;
  if (pg->kind == PK_SPAN) {
    vg_span_hold(pg);
  } else {
    struct block *b = p;
    blk_store(&b->next, remote_tag(b));
  }
  if (harden_level() >= HARDEN_FILL) memset((uint8_t *)p + FILL_FROM, 0, size - FILL_FROM);
  if (h->q_nfifo == fifo_cap()) {
    /* The FIFO's oldest moves to the pool; a full pool gives up a random
     * block for it. */
    void *old = h->q_fifo[h->q_head];
    h->q_head = (h->q_head + 1) % VG_QFIFO;
    h->q_nfifo--;
    if (h->q_npool < pool_cap()) {
      h->q_pool[h->q_npool++] = old;
    } else {
      void *out = old;
      if (pool_cap() != 0) {
        unsigned i = (unsigned)(rng_next(h) % h->q_npool);
        out = h->q_pool[i];
        h->q_pool[i] = old;
      }
      h->q_bytes -= release(out);
    }
  }
  h->q_fifo[(h->q_head + h->q_nfifo++) % VG_QFIFO] = p;
  h->q_bytes += size;
  /* The byte bound; the block just freed always stays. */
  size_t cap = vg_option(OPT_quarantine);
  while (h->q_bytes > cap && h->q_nfifo + h->q_npool > 1) h->q_bytes -= release(take_one(h));
}

/* The i-th block h holds, i < q_nfifo + q_npool: the FIFO's, then the
 * pool's. */
void *vg_quarantine_at(const struct heap *h, unsigned i) {
  return i < h->q_nfifo ? h->q_fifo[(h->q_head + i) % VG_QFIFO] : h->q_pool[i - h->q_nfifo];
}

/* Thread exit and malloc_trim: everything held goes. */
void vg_quarantine_flush(struct heap *h) {
  while (h->q_nfifo + h->q_npool > 0) h->q_bytes -= release(take_one(h));
}

/* At exit, what the main thread still holds is checked as its release
 * would check it, and its thread cache (harden = 1 holds blocks back
 * there) and held blocks (heap.h) as a malloc or the next free would: a
 * write after free to a block that was never reused is reported too. */
static void check(struct page *pg, void *p) {
  bool tagged = pg->kind == PK_SPAN || remote_freed(p);
  if (!tagged || (harden_level() >= HARDEN_FILL && !fill_intact(p, pg->bsize))) vg_fatal(V_WRITE_AFTER_FREE, p);
}
__attribute__((destructor)) static void check_at_exit(void) {
  struct heap *h = vg_tl_heap;
  if (!harden_level() || h == NULL || load_relaxed(&vg_unusable)) return;
  for (unsigned i = 0; i < h->q_nfifo + h->q_npool; i++) {
    void *p = vg_quarantine_at(h, i);
    check(page_of(p), p);
  }
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    if (h->tc_held[c] != NULL && !remote_freed(h->tc_held[c])) vg_fatal(V_WRITE_AFTER_FREE, h->tc_held[c]);
    for (unsigned i = 0; c < VG_TC_CLASSES && i < h->tc_n[c]; i++) {
      struct block *b = *tc_row(h, c, i);
      if (!remote_freed(b)) vg_fatal(V_WRITE_AFTER_FREE, b);
    }
  }
}
