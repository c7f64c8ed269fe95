/* White-box tests of the modules' own invariants, through the prefixed
 * build: the segment registry, the large-block table and cache, the remote
 * free stack, the decommit accounting and the fit table. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "heap.h"
#include "testlib.h"

static void test_registry(void) {
  int on_stack;
  CHECK(segment_of(NULL) == NULL, "NULL");
  CHECK(segment_of(&on_stack) == NULL, "stack address");
  CHECK(segment_of((void *)test_registry) == NULL, "code address");
  CHECK(segment_of((void *)UINTPTR_MAX) == NULL, "top of the address space");
  void *small = vigil_malloc(100);
  struct page *pg = page_of(small);
  CHECK(pg && pg->kind == PK_SMALL && slot_index(pg, small) != UINT32_MAX, "small block not found");
  CHECK(pg && slot_index(pg, (char *)small + 16) == UINT32_MAX, "interior pointer accepted");
  struct segment *s = segment_of(small);
  CHECK(s && s->cookie == (vg_secret ^ (uintptr_t)s), "segment cookie");
  CHECK(s && (s->used & VG_SEG_META_MASK) == VG_SEG_META_MASK, "metadata pages not reserved");
  void *big = vigil_malloc(8 << 20);
  CHECK(segment_of(big) == NULL, "a large block is not in a segment");
  CHECK(vg_large_usable(big) >= (8u << 20), "large block not in the table");
  vigil_free(big);
  vigil_free(small);
}

/* Enough blocks to make the table grow several times, freed in a shuffled
 * order so backward-shift deletion runs over wrapped probe chains. */
static void test_large_table(void) {
  enum { N = 5000 };
  static void *v[N];
  struct vg_large_stats st0, st;
  vg_large_stats(&st0);
  for (int i = 0; i < N; i++) {
    v[i] = vg_large_alloc(4096 * (size_t)(1 + i % 3), 0, false);
    REQUIRE(v[i], "large alloc %d", i);
    ((char *)v[i])[0] = 1;
  }
  vg_large_stats(&st);
  CHECK(st.blocks == st0.blocks + N, "blocks %zu, want %zu", st.blocks, st0.blocks + N);
  /* Rounded up to the page size vigil reads at run time (4, 16 or 64 KiB). */
  size_t ps = vg_os_page_size();
  int missing = 0;
  for (int i = 0; i < N; i++) missing += vg_large_usable(v[i]) != align_up(4096 * (size_t)(1 + i % 3), ps);
  CHECK(missing == 0, "%d blocks with a wrong usable size", missing);
  unsigned r = 12345;
  for (int i = N - 1; i > 0; i--) {
    r = r * 1103515245u + 12345u;
    int j = (int)(r % (unsigned)(i + 1));
    void *t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
  int stale = 0;
  for (int i = 0; i < N; i++) {
    CHECK(vg_large_free(v[i]), "free of block %d not found", i);
    stale += vg_large_usable(v[i]) != 0;
  }
  CHECK(stale == 0, "%d freed blocks still found", stale);
  vg_large_stats(&st);
  CHECK(st.blocks == st0.blocks, "blocks left: %zu", st.blocks - st0.blocks);
  CHECK(st.cached <= 64 && st.cached_bytes <= vg_option(OPT_large_cache), "cache over its bounds: %zu blocks, %zu bytes",
        st.cached, st.cached_bytes);
  vigil_malloc_trim(0);
  vg_large_stats(&st);
  CHECK(st.cached == 0 && st.cached_bytes == 0, "trim left %zu cached", st.cached);
}

/* Blocks freed by another thread travel on the owner's remote stack (the
 * thread's last batch is pushed as it exits), each with the remote tag, and
 * come back into its pages when it drains. */
enum { NB = 3000 };
static void *blocks[NB];
static void *free_all(void *arg) {
  (void)arg;
  for (int i = 0; i < NB; i++) vigil_free(blocks[i]);
  return NULL;
}
static void test_remote(void) {
  for (int i = 0; i < NB; i++) blocks[i] = vigil_malloc(48);
  struct heap *h = vg_tl_heap;
  REQUIRE(h, "no heap");
  pthread_t t;
  pthread_create(&t, NULL, free_all, NULL);
  pthread_join(t, NULL);
  uintptr_t head = load_acquire(&h->remote);
  CHECK(head != 0 && head != VG_REMOTE_CLOSED, "remote stack empty after remote frees");
  size_t n = 0, untagged = 0;
  for (uintptr_t b = head; b && n <= NB; b = (uintptr_t)decode(((struct block *)b)->rnext, (void *)b)) {
    untagged += !remote_freed((struct block *)b);
    n++;
  }
  CHECK(n == NB, "remote stack holds %zu blocks, want %d", n, NB);
  CHECK(untagged == 0, "%zu blocks on the remote stack without the tag", untagged);
  vg_heap_drain(h);
  CHECK(load_relaxed(&h->remote) == 0, "drain left entries");
  struct mallinfo2 mi = vigil_mallinfo2();
  CHECK(mi.uordblks == 0, "in-use bytes %zu after the drain", mi.uordblks);
}

/* Dirty bytes are exactly the free-but-resident pages. */
static void test_decommit_accounting(void) {
  void *v[40];
  for (int i = 0; i < 40; i++) v[i] = vigil_malloc(100 << 10); /* spans */
  for (int i = 0; i < 40; i++) vigil_free(v[i]);
  for (unsigned i = 0; i < load_relaxed(&vg_narenas); i++) {
    struct arena *a = vg_arena_at(i);
    if (!a) continue;
    vg_lock(&a->lock);
    size_t dirty = 0;
    for (struct segment *s = a->segs; s; s = s->next) {
      CHECK((s->dirty & s->decommitted) == 0, "a page both dirty and decommitted");
      CHECK((s->dirty & s->used) == 0, "a used page marked dirty");
      dirty += (size_t)__builtin_popcountll(s->dirty) * VG_PAGE;
    }
    CHECK(dirty == a->dirty, "arena %u: dirty %zu, pages say %zu", i, a->dirty, dirty);
    vg_unlock(&a->lock);
  }
  CHECK(vigil_malloc_trim(0) == 1 || vigil_mallinfo2().keepcost == 0, "trim released nothing");
  CHECK(vigil_mallinfo2().keepcost == 0, "keepcost %zu after trim", vigil_mallinfo2().keepcost);
}

/* calloc served from the large cache gets fresh zero pages (large.c), not
 * the last owner's bytes. */
static void test_calloc_cached(void) {
  size_t n = (size_t)8 << 20, dirty = 0;
  unsigned char *p = vigil_malloc(n), *newest = vigil_malloc(n);
  REQUIRE(p && newest, "malloc");
  memset(p, 0xff, n);
  vigil_free(p);
  vigil_free(newest); /* the newest cached mapping is not reused next: p is */
  unsigned long m0 = load_relaxed(&vg_os_counts.map);
  unsigned char *q = vigil_calloc(1, n);
  REQUIRE(q, "calloc");
  CHECK(q == p, "calloc(%zu) did not reuse the cached mapping %p (got %p)", n, (void *)p, (void *)q);
  CHECK(load_relaxed(&vg_os_counts.map) == m0 + 1, "calloc from the cache made %lu map calls, want 1 (fresh zero pages)",
        load_relaxed(&vg_os_counts.map) - m0);
  for (size_t i = 0; i < n; i++) dirty += q[i] != 0;
  CHECK(dirty == 0, "%zu bytes of a cached calloc block not zero", dirty);
  vigil_free(q);
}

/* The arena's fit table (segment.c) names every segment once, with the
 * length of its longest free run, also after it has grown: more segments
 * than its first size, each holding one span of most of a segment. */
static unsigned longest_run(uint64_t used) {
  unsigned best = 0, cur = 0;
  for (unsigned i = 0; i < VG_SEG_PAGES; i++) {
    cur = used >> i & 1 ? 0 : cur + 1;
    if (cur > best) best = cur;
  }
  return best;
}

static void check_fit_tables(const char *when) {
  for (unsigned i = 0; i < load_relaxed(&vg_narenas); i++) {
    struct arena *a = vg_arena_at(i);
    if (!a) continue;
    vg_lock(&a->lock);
    unsigned segs = 0, slots = 0, wrong = 0;
    for (struct segment *s = a->segs; s; s = s->next, segs++)
      wrong += s->slot >= a->nfit || a->fit[s->slot].seg != s || a->fit[s->slot].longest != longest_run(s->used);
    for (unsigned k = 0; k < a->nfit; k++) slots += a->fit[k].seg != NULL;
    CHECK(wrong == 0, "%s: arena %u: %u segments with a wrong fit slot", when, i, wrong);
    CHECK(slots == segs, "%s: arena %u: %u fit slots for %u segments", when, i, slots, segs);
    vg_unlock(&a->lock);
  }
}

static void test_fit_table(void) {
  enum { N = VG_FIT_FIRST + 8 };
  static void *v[N];
  size_t big = VG_SPAN_MAX - VG_PAGE;
  for (int i = 0; i < N; i++) REQUIRE((v[i] = vigil_malloc(big)), "span %d", i);
  struct page *pg = page_of(v[0]);
  CHECK(pg && pg->kind == PK_SPAN, "a %zu-byte block is not a span", big);
  struct arena *a = segment_of(v[0])->arena;
  CHECK(a->fit_cap > VG_FIT_FIRST, "fit table did not grow: %u slots for %d spans", a->fit_cap, N);
  check_fit_tables("spans live");
  for (int i = 0; i < N; i += 2) vigil_free(v[i]);
  check_fit_tables("half freed");
  for (int i = 1; i < N; i += 2) vigil_free(v[i]);
  vigil_malloc_trim(0);
  check_fit_tables("trimmed");
}

int main(void) {
  test_calloc_cached();
  vigil_free(vigil_malloc(1));
  WHITE_BOX(test_registry());
  WHITE_BOX(test_large_table());
  WHITE_BOX(test_remote());
  WHITE_BOX(test_decommit_accounting());
  WHITE_BOX(test_fit_table());
  return test_done("unit_modules");
}
