/* Observability: mallinfo2, mallinfo, malloc_info, malloc_stats and the
 * stats_on_exit line.  Numbers are read from the real structures (segments,
 * page runs, the large table), each arena under its lock. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "heap.h"

struct totals {
  size_t segments, arena_bytes;     /* committed bytes usable for blocks */
  size_t small_used, small_free;    /* bytes in small pages */
  size_t span_bytes, spans;
  size_t free_pages, dirty_bytes, decommitted_bytes;
  size_t abandoned_pages, small_pages, free_slots;
  size_t mapped, mapped_max;
  size_t class_free[VG_NCLASSES]; /* free slots of each small class */
};

static void add_arena(struct arena *a, struct totals *t) {
  for (struct segment *s = a->segs; s; s = s->next) {
    t->segments++;
    for (unsigned i = VG_SEG_FIRST_PAGE; i < VG_SEG_PAGES; i++) {
      struct page *pg = &s->pages[i];
      uint64_t bit = (uint64_t)1 << i;
      if (pg->kind == PK_SMALL) {
        size_t used = load_relaxed(&pg->used);
        t->small_pages++;
        t->small_used += used * pg->bsize;
        t->small_free += (pg->capacity - used) * (size_t)pg->bsize;
        t->free_slots += pg->capacity - used;
        t->class_free[pg->cls] += pg->capacity - used;
        if (load_relaxed(&pg->owner) == NULL) t->abandoned_pages++;
      } else if (pg->kind == PK_SPAN && vg_span_is_free(pg)) {
        t->free_pages += pg->npages; /* kept by a heap for reuse */
      } else if (pg->kind == PK_SPAN) {
        t->spans++;
        t->span_bytes += pg->bsize;
      } else if (pg->kind == PK_FREE) {
        t->free_pages++;
        if (s->decommitted & bit) t->decommitted_bytes += VG_PAGE;
        else if (s->dirty & bit) t->dirty_bytes += VG_PAGE;
      }
    }
  }
}

/* A small block the calling thread holds freed, still marked allocated. */
static void count_free(struct totals *t, struct page *pg, unsigned only) {
  if (only != UINT32_MAX && segment_of_page(pg)->arena->index != only) return;
  t->small_used -= pg->bsize;
  t->small_free += pg->bsize;
  t->free_slots++;
  t->class_free[pg->cls]++;
}

/* Blocks the calling thread holds (heap.h), caches and quarantines
 * (harden.c; a held span counts as free already) are free to it, so they
 * count as free here.
 * Other threads' cannot be read safely, so their blocks count as in use,
 * as glibc counts the chunks in its tcaches. */
static void own_cache(struct totals *t, unsigned only) {
  struct heap *h = vg_tl_heap;
  if (h == NULL) return;
  for (unsigned c = 0; c < VG_NCLASSES; c++)
    if (h->tc_held[c] != NULL) count_free(t, page_of(h->tc_held[c]), only);
  for (unsigned c = 0; c < VG_TC_CLASSES; c++)
    for (unsigned i = 0; i < h->tc_n[c]; i++) count_free(t, page_of(*tc_row(h, c, i)), only);
  for (unsigned i = 0; i < h->q_nfifo + h->q_npool; i++) {
    struct page *pg = page_of(vg_quarantine_at(h, i));
    if (pg->kind == PK_SMALL) count_free(t, pg, only);
  }
}

static void collect(struct totals *t, unsigned only) {
  memset(t, 0, sizeof *t);
  unsigned n = load_relaxed(&vg_narenas);
  for (unsigned i = 0; i < n; i++) {
    struct arena *a = vg_arena_at(i);
    if (a == NULL || (only != UINT32_MAX && only != i)) continue;
    vg_lock(&a->lock);
    add_arena(a, t);
    t->mapped += a->mapped;
    t->mapped_max += a->mapped_max;
    vg_unlock(&a->lock);
  }
  own_cache(t, only);
  t->arena_bytes = t->small_used + t->small_free + t->span_bytes + t->dirty_bytes;
}

struct mallinfo2 vigil_mallinfo2(void) {
  vg_ann_enter();
  vg_init();
  struct totals t;
  struct vg_large_stats l;
  collect(&t, UINT32_MAX);
  vg_large_stats(&l);
  vg_ann_leave();
  struct mallinfo2 m = {0};
  m.arena = t.arena_bytes;
  m.ordblks = t.free_slots + t.free_pages;
  m.hblks = l.blocks;
  m.hblkhd = l.bytes;
  m.uordblks = t.small_used + t.span_bytes;
  m.fordblks = t.small_free + t.dirty_bytes;
  m.keepcost = t.dirty_bytes + l.cached_bytes;
  return m;
}

struct mallinfo vigil_mallinfo(void) {
  struct mallinfo2 m2 = vigil_mallinfo2();
  struct mallinfo m = {0};
  m.arena = (int)m2.arena;
  m.ordblks = (int)m2.ordblks;
  m.hblks = (int)m2.hblks;
  m.hblkhd = (int)m2.hblkhd;
  m.uordblks = (int)m2.uordblks;
  m.fordblks = (int)m2.fordblks;
  m.keepcost = (int)m2.keepcost;
  return m;
}

/* glibc's layout (2.36), so that tools that read glibc's output read
 * vigil's: per arena a <heap> with <sizes> (here one <size> per small class
 * with free slots), the fast and rest totals, system and aspace sizes; then
 * the same totals for the process, with mmap (vigil's large blocks).
 * vigil's own numbers are in elements whose names start with "vigil", which
 * glibc never writes.  Per heap: system current is the committed bytes
 * usable for blocks, system max the most the arena ever mapped, aspace
 * total what it maps now and aspace mprotect that less what went back.
 * Output is not cancelled half-way (glibc BZ 22830): see vigil_malloc_stats. */
static void info_sizes(FILE *fp, const struct totals *t) {
  fprintf(fp, "<sizes>\n");
  for (unsigned c = 0; c < VG_NCLASSES; c++)
    if (t->class_free[c])
      fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n", class_size(c), class_size(c),
              t->class_free[c] * class_size(c), t->class_free[c]);
  fprintf(fp, "</sizes>\n");
}

static void info_totals(FILE *fp, const struct totals *t) {
  fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
          t->free_slots + t->free_pages, t->small_free + t->free_pages * VG_PAGE);
}

static void info_system(FILE *fp, const struct totals *t, size_t mmap_bytes) {
  size_t current = t->arena_bytes + mmap_bytes, max = t->mapped_max + mmap_bytes;
  fprintf(fp,
          "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
          "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n",
          current, max > current ? max : current, t->mapped + mmap_bytes, t->mapped - t->decommitted_bytes + mmap_bytes);
}

static int malloc_info_uncancelled(FILE *fp) {
  struct totals all, t;
  struct vg_large_stats l;
  unsigned n = load_relaxed(&vg_narenas);
  fprintf(fp, "<malloc version=\"1\">\n");
  for (unsigned i = 0; i < n; i++) {
    if (vg_arena_at(i) == NULL) continue;
    collect(&t, i);
    fprintf(fp, "<heap nr=\"%u\">\n", i);
    info_sizes(fp, &t);
    info_totals(fp, &t);
    info_system(fp, &t, 0);
    fprintf(fp,
            "<vigil segments=\"%zu\" small_pages=\"%zu\" spans=\"%zu\" free_pages=\"%zu\" abandoned_pages=\"%zu\" "
            "used=\"%zu\" free=\"%zu\" dirty=\"%zu\" decommitted=\"%zu\"/>\n</heap>\n",
            t.segments, t.small_pages, t.spans, t.free_pages, t.abandoned_pages, t.small_used + t.span_bytes,
            t.small_free, t.dirty_bytes, t.decommitted_bytes);
  }
  collect(&all, UINT32_MAX);
  vg_large_stats(&l);
  info_totals(fp, &all);
  fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", l.blocks, l.bytes);
  info_system(fp, &all, l.bytes + l.cached_bytes);
  fprintf(fp, "<vigil-arenas count=\"%u\" created=\"%u\" cpus=\"%u\"/>\n", vg_arena_count(), n, vg_os_cpu_count());
  fprintf(fp, "<vigil-large blocks=\"%zu\" bytes=\"%zu\" cached=\"%zu\" cached_bytes=\"%zu\"/>\n", l.blocks, l.bytes,
          l.cached, l.cached_bytes);
  fprintf(fp, "<vigil-thresholds mmap=\"%zu\" trim=\"%zu\" fixed=\"%d\"/>\n", vg_mmap_threshold(),
          vg_trim_threshold(), load_relaxed(&vg_opt_thresholds_fixed));
  fprintf(fp, "<vigil-decommit mode=\"%s\"/>\n", vg_decommit_remap() ? "remap" : "madvise");
  fprintf(fp, "</malloc>\n");
  return 0;
}

int vigil_malloc_info(int options, FILE *fp) {
  if (options != 0) return EINVAL; /* glibc 2.36 returns it; errno untouched */
  vg_ann_enter();
  vg_init();
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  int r = malloc_info_uncancelled(fp);
  pthread_setcancelstate(old, NULL);
  vg_ann_leave();
  return r;
}

/* glibc's layout: one block per arena, then the totals.  Every fprintf is
 * a cancellation point: a thread with a cancel pending would stop after
 * the first line (glibc BZ 22830, malloc/tst-malloc-stats-cancellation.c),
 * so cancellation is off while it writes, and a pending cancel acts at the
 * thread's next cancellation point. */
void vigil_malloc_stats(void) {
  vg_ann_enter();
  vg_init();
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  struct totals t, all;
  struct vg_large_stats l;
  unsigned n = load_relaxed(&vg_narenas);
  for (unsigned i = 0; i < n; i++) {
    if (vg_arena_at(i) == NULL) continue;
    collect(&t, i);
    fprintf(stderr, "Arena %u:\nsystem bytes     = %10zu\nin use bytes     = %10zu\n", i, t.arena_bytes,
            t.small_used + t.span_bytes);
  }
  collect(&all, UINT32_MAX);
  vg_large_stats(&l);
  fprintf(stderr,
          "Total (incl. mmap):\nsystem bytes     = %10zu\nin use bytes     = %10zu\n"
          "max mmap regions = %10zu\nmax mmap bytes   = %10zu\n",
          all.arena_bytes + l.bytes, all.small_used + all.span_bytes + l.bytes, l.blocks, l.bytes);
  pthread_setcancelstate(old, NULL);
  vg_ann_leave();
}

/* One line for humans and for the preload test, which uses it to prove that
 * vigil served the process. */
__attribute__((destructor)) static void stats_on_exit(void) {
  if (!load_acquire(&vg_ready) || !vg_option(OPT_stats_on_exit)) return;
  char buf[160];
  int len = snprintf(buf, sizeof buf, "vigil: exit: pid=%ld segments=%zu mapped_ever=%zu arenas=%u\n",
                     (long)getpid(), load_relaxed(&vg_segments_mapped), load_relaxed(&vg_segments_total),
                     load_relaxed(&vg_narenas));
  if (len > 0) vg_os_write_err(buf, (size_t)len);
}

VG_EXPORT_STD(mallinfo2)
VG_EXPORT_STD(mallinfo)
VG_EXPORT_STD(malloc_info)
VG_EXPORT_STD(malloc_stats)
