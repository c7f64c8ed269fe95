/* Pages: runs of VG_PAGE cut into slots of one size class, with lazily
 * built free lists and an allocation bitmap per run. */
#include "internal.h"

#define C1(i) VG_CLASS_1K((i) * 16u)
#define C4(i) C1(i), C1((i) + 1), C1((i) + 2), C1((i) + 3)
#define C16(i) C4(i), C4((i) + 4), C4((i) + 8), C4((i) + 12)
const uint8_t vg_class_1k[1024 / 16 + 1] = {C16(0), C16(16), C16(32), C16(48), C1(64)};
#undef C16
#undef C4
#undef C1

/* Sentinel for a heap's empty class slot: its free list is always empty,
 * so the fast path needs no NULL check on the page. */
struct page vg_empty_page;

static void mark_run(struct segment *s, unsigned first, unsigned n, uint8_t kind) {
  for (unsigned i = 1; i < n; i++) {
    s->pages[first + i].kind = PK_TAIL;
    s->pages[first + i].head = (uint8_t)first;
  }
  struct page *pg = &s->pages[first];
  pg->kind = kind;
  pg->npages = (uint8_t)n;
  pg->head = (uint8_t)first;
  pg->start = page_addr(s, first);
  pg->free = NULL;
  store_relaxed(&pg->used, 0);
  store_relaxed(&pg->owner, NULL);
  pg->next = pg->prev = NULL;
  pg->in_full = 0;
  pg->guard = 0;
  pg->reserved = 0;
  s->used |= run_mask(first, n);
  vg_segment_refit(s);
}

void vg_page_init_small(struct segment *s, unsigned first, unsigned cls) {
  unsigned n = class_pages(cls);
  mark_run(s, first, n, PK_SMALL);
  struct page *pg = &s->pages[first];
  pg->cls = (uint8_t)cls;
  pg->bsize = (uint32_t)class_size(cls);
  pg->capacity = (uint32_t)(n * VG_PAGE / pg->bsize);
  pg->magic = (uint32_t)((((uint64_t)1 << 32) + pg->bsize - 1) / pg->bsize);
  memset(pg->bits, 0, ((pg->capacity + 63) / 64) * sizeof(uint64_t));
  vg_ann_slots(pg->start, (size_t)n * VG_PAGE);
}

void vg_page_init_span(struct segment *s, unsigned first, unsigned n) {
  mark_run(s, first, n, PK_SPAN);
  struct page *pg = &s->pages[first];
  pg->cls = VG_NCLASSES;
  pg->bsize = (uint32_t)(n * VG_PAGE);
  pg->capacity = 1;
  pg->magic = (uint32_t)((((uint64_t)1 << 32) + pg->bsize - 1) / pg->bsize);
  pg->reserved = 1;
  store_relaxed(&pg->used, 1);
}

/* Put the next never-used slots on the free list: about 4 KiB of them, so
 * a fresh page is touched as it is used, not all at once. */
void vg_page_extend(struct page *pg) {
  uint32_t n = 4096 / pg->bsize;
  if (n == 0) n = 1;
  if (n > pg->capacity - pg->reserved) n = pg->capacity - pg->reserved;
  uint8_t *first = pg->start + (size_t)pg->reserved * pg->bsize;
  struct block *next = pg->free;
  for (uint32_t i = n; i-- > 0;) {
    struct block *b = (struct block *)(first + (size_t)i * pg->bsize);
    blk_store(&b->next, encode(next, b));
    next = b;
  }
  pg->free = next;
  pg->reserved += n;
  vg_ann_slots(first, (size_t)n * pg->bsize);
}
