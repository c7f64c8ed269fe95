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
 *   2 quarantine  + freed small blocks and spans wait in a per-thread
 *                 quarantine before their memory can be handed out again: a
 *                 FIFO of VG_QFIFO blocks, then a random-replacement pool
 *                 of VG_QPOOL, bounded in bytes by the `quarantine` tunable.
 *                 A quarantined block keeps its allocation bit and carries
 *                 the remote tag (heap.h), a span is marked held: a second
 *                 free of either is a double free, however many mallocs came
 *                 between.  Freed large blocks are unmapped behind a
 *                 PROT_NONE reservation that is released late (large.c).
 *   3 fill        + a quarantined block is zeroed past its two link words,
 *                 and checked when it leaves: a write after free is fatal.
 *
 * The sanitizer and Valgrind builds (VG_ANNOTATE) run at level 0: the
 * checkers see every byte themselves, and vigil's own writes into freed
 * blocks would be their false reports. */
#include "heap.h"

uint8_t vg_harden;

void vg_harden_init(void) {
  size_t v = vg_option(OPT_harden);
  vg_harden = VG_ANNOTATE ? 0 : (uint8_t)v;
}

/* ---- canaries ------------------------------------------------------------ */
static inline uint64_t canary_key(const void *p) {
  uint64_t k = ((uint64_t)vg_secret ^ (uint64_t)(uintptr_t)p) * 0x9E3779B97F4A7C15ull;
  return k ^ (k >> 29);
}
/* The canary as a word whose bytes, in memory order, are: a key byte with
 * the top bit set (never zero), a zero, then key bytes. */
static inline uint64_t canary_word(uint64_t k) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return (k | 0x80) & ~(uint64_t)0xff00;
#else
  return (k | ((uint64_t)0x80 << 56)) & ~((uint64_t)0xff << 48);
#endif
}
static inline size_t canary_len(size_t n, size_t bsize) {
  size_t room = bsize - 2 - n;
  return room < 8 ? room : 8;
}

void vg_canary_set(void *p, size_t n, size_t bsize) {
  uint8_t *u = p;
  uint64_t k = canary_key(p), c = canary_word(k);
  size_t len = canary_len(n, bsize);
  if (likely(len == 8)) memcpy(u + n, &c, 8); /* one store */
  else memcpy(u + n, &c, len);                /* the first len bytes, in memory order */
  uint16_t t = (uint16_t)(n ^ (k >> 48));
  memcpy(u + bsize - 2, &t, 2);
}

size_t vg_canary_check(const void *p, size_t bsize) {
  const uint8_t *u = p;
  uint64_t k = canary_key(p), c = canary_word(k);
  uint16_t t;
  memcpy(&t, u + bsize - 2, 2);
  size_t n = (uint16_t)(t ^ (k >> 48));
  if (n + VG_CANARY_ROOM > bsize) return SIZE_MAX;
  size_t len = canary_len(n, bsize);
  uint64_t w = 0;
  if (likely(len == 8)) {
    memcpy(&w, u + n, 8);
    return w == c ? n : SIZE_MAX;
  }
  return memcmp(u + n, &c, len) == 0 ? n : SIZE_MAX;
}

/* ---- quarantine ---------------------------------------------------------- */
static size_t held_size(void *p) {
  struct page *pg = page_of(p);
  return pg->bsize;
}

static inline uint64_t rng_next(struct heap *h) {
  uint64_t x = h->q_rng;
  if (x == 0) x = (uint64_t)vg_secret ^ (uint64_t)(uintptr_t)h ^ 0x2545F4914F6CDD1Dull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  h->q_rng = x;
  return x;
}

/* Words a quarantined block keeps untouched: its tag and a spare one. */
#define FILL_FROM (2 * sizeof(uintptr_t))

static bool fill_intact(const uint8_t *u, size_t n) {
  for (size_t i = FILL_FROM; i < n; i += sizeof(uint64_t)) {
    uint64_t w;
    memcpy(&w, u + i, sizeof w);
    if (w != 0) return false;
  }
  return true;
}

static void check(struct page *pg, void *p);

/* A block leaves the quarantine: checked, then freed for real. */
static void release(struct heap *h, void *p) {
  (void)h;
  struct page *pg = page_of(p);
  check(pg, p);
  if (pg->kind == PK_SPAN) {
    vg_span_unhold(pg);
    return;
  }
  blk_store(&((struct block *)p)->next, 0);
  small_free(pg, p, V_CORRUPT_METADATA); /* the thread cache, or its page */
}

/* The block of the pool at i (or the FIFO's oldest when the pool is
 * empty) leaves; its place is free. */
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
  h->q_bytes -= held_size(p);
  return p;
}

/* Blocks held at each level: the FIFO's depth and the pool's size. */
static inline unsigned fifo_cap(void) { return vg_harden >= HARDEN_QUARANTINE ? VG_QFIFO : VG_QFIFO_CANARY; }
static inline unsigned pool_cap(void) { return vg_harden >= HARDEN_QUARANTINE ? VG_QPOOL : 0; }

/* free at level 1 and up, of a validated live small block or span. */
void vg_quarantine_put(struct heap *h, struct page *pg, void *p) {
  size_t size = pg->bsize;
  if (pg->kind == PK_SPAN) {
    vg_span_hold(pg);
  } else {
    struct block *b = p;
    blk_store(&b->next, remote_tag(b));
  }
  if (vg_harden >= HARDEN_FILL) memset((uint8_t *)p + FILL_FROM, 0, size - FILL_FROM);
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
      h->q_bytes -= held_size(out);
      release(h, out);
    }
  }
  h->q_fifo[(h->q_head + h->q_nfifo++) % VG_QFIFO] = p;
  h->q_bytes += size;
  /* The byte bound; the block just freed always stays. */
  size_t cap = vg_option(OPT_quarantine);
  while (h->q_bytes > cap && h->q_nfifo + h->q_npool > 1) release(h, take_one(h));
}

/* Thread exit and malloc_trim: everything held goes. */
void vg_quarantine_flush(struct heap *h) {
  while (h->q_nfifo + h->q_npool > 0) release(h, take_one(h));
}

/* At exit, what the main thread still holds is checked as its release
 * would check it: a write after free to a block that was never reused is
 * reported too. */
static void check(struct page *pg, void *p) {
  bool tagged = pg->kind == PK_SPAN || remote_freed(p);
  if (!tagged || (vg_harden >= HARDEN_FILL && !fill_intact(p, pg->bsize))) vg_fatal(V_WRITE_AFTER_FREE, p);
}
__attribute__((destructor)) static void check_at_exit(void) {
  struct heap *h = vg_tl_heap;
  if (!vg_harden || h == NULL || load_relaxed(&vg_unusable)) return;
  for (unsigned i = 0; i < h->q_nfifo; i++) {
    void *p = h->q_fifo[(h->q_head + i) % VG_QFIFO];
    check(page_of(p), p);
  }
  for (unsigned i = 0; i < h->q_npool; i++) check(page_of(h->q_pool[i]), h->q_pool[i]);
}
