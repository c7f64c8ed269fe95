/* The cost oracle (cost.h): the amortized bounds and where they come from.
 *
 * Moved bytes.  A block that has to move to grow gets half as much room
 * again (src/api.c), and a large block whose headroom runs out moves into a
 * reservation at least twice its size (src/large.c).  Between two moves of a growing
 * chain its usable size therefore rises by 1.5x at least, and each move
 * carries at most the old usable size: the moves of one growth form a
 * geometric series, at most 3x the usable size before the last move, which
 * is below the request that caused it.  A shrink moves only below half the
 * usable size, and then carries the new request, which is less than the
 * |new - old| it adds to the credit.  So moved <= 3 x credit, and
 * COST_MOVE_C = 4 leaves room for the size-class rounding (four classes
 * per doubling).  Measured: +1 B and +16 B steps from 1 B to 64 KiB reach
 * 2.78, +4 KiB steps to 16 MiB 2.38, cycles between the tiers 0.07.  A
 * realloc that moves every time breaks it within a few steps: N reallocs of
 * an n-byte block to the same size move N x n against a credit of n, and
 * +16 B steps from 16 B cross 4x at the ninth.
 *
 * Syscalls.  Per program, after the oracle's malloc_trim(0) (dirty pages
 * decommitted, every empty segment unmapped):
 *   - W (16): the first segment a program maps (vg_os_map_aligned makes up
 *     to 5 calls, then 2 mprotect for the guards), a metadata chunk, the
 *     large table's first growth;
 *   - K (8) per op on a large block (old or new), and per request of over
 *     64 KiB that failed (it may have tried a mapping): mmap + 2 mprotect to
 *     map one, or 1 mprotect to take a cached one into its headroom; 1
 *     munmap to free (or 1 per cached block evicted, paid by the free that
 *     cached it); 5 to move into a new reservation (7 above 1 GiB, where
 *     mmap probes the size first).  A realloc that keeps a large block
 *     where it is earns K x min(1, 8 |new - old| / usable): headroom is
 *     committed an eighth more than asked, so a block grown in small steps
 *     commits once per eighth of its size, and it is shrunk in place only
 *     below half (+4 KiB steps to 16 MiB: 31 calls, bound 572; K per op
 *     would allow 27,000 and hide a commit on every step);
 *   - nothing per op on a small block or a span: their cost is in pages.
 *     A purge makes one madvise per contiguous run of dirty pages, and
 *     under remap decommit (overcommit_memory=2) a decommitted run costs one
 *     mprotect when it is claimed again: at most R = 2 calls per page per
 *     purge.  Segments (8 calls for 61 pages) are mapped as the pages in use
 *     grow and unmapped only by a purge.  So the cost is R x (pages) per
 *     purge "round", and the rounds are:
 *       2    the purges dirty bytes force at once: past the hard cap (32
 *            MiB, or 4x the arena's threshold) a free purges everything,
 *            and when those pages are needed again within decay_ms the
 *            threshold doubles past what was returned (decommit.c), so
 *            successive forced purges return geometrically more: their sum
 *            is at most 2x the largest;
 *       + ticks x (1 + spawns)   one purge per decay_ms of wall time per
 *            arena (a thread may bring its own): a tick, at a free or an
 *            arena allocation, returns every dirty page when the arena is
 *            over its threshold, else those that stayed unused a whole
 *            decay_ms.  Counted from the clock, so slow runs (QEMU,
 *            Valgrind, sanitizers) get more;
 *       + events   a trim purges everything; a thread's exit purges and
 *            resets its arena's learnt threshold; a fork child starts again.
 *     The pages are the peak, over the program, of what its blocks need:
 *     the live spans' pages (plus their alignment above 64 KiB, which may
 *     leave the rest of a segment unusable), and for each small class the
 *     most runs of its pages that its live blocks ever needed at once (a
 *     thread heap keeps a class's page: +1 B steps through 30 classes with
 *     one block live claim 13 pages, and under remap decommit each costs an
 *     mprotect);
 *   - S (16) per trim, spawn and fork, on top of their round.
 * A loop of span-sized malloc/free has bound W + R x 3 x (pages + 1): O(1)
 * however long it runs (100 KiB: 34, whatever the count; the real tree
 * makes none once its first segment is mapped, 8 calls in a fresh
 * process); a decommit policy that purges on every free costs one madvise
 * per round that reaches the arena (past the thread's span cache) and
 * crosses it within a few dozen rounds.  Measured margins on the shapes of
 * corpus/api/cost-*.ops and of seed 000 (BZ 17195's mixed sizes in rounds,
 * 4 MiB span churn, 2 MiB-aligned spans, +1 B to +4 KiB growth), each in a
 * fresh process: 3x (a mapped block resized by large factors on every op:
 * about 3 calls an op against K = 8) to 97x, with madvise or remap
 * decommit.
 *
 * Where it is off: cost_tunables_forbid (fixed thresholds, decay_ms 0) and
 * oracle.c (the fork target's parent, whose background threads allocate;
 * the threads target checks only while no spawned thread runs). */
#define _GNU_SOURCE
#include "cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "model.h"

static_assert(COST_CLASSES == VG_NCLASSES, "one counter per small class");

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void read_counts(unsigned long v[COST_NCOUNT]) {
  v[COST_MAP] = load_relaxed(&vg_os_counts.map);
  v[COST_UNMAP] = load_relaxed(&vg_os_counts.unmap);
  v[COST_MADVISE] = load_relaxed(&vg_os_counts.madvise);
  v[COST_PROTECT] = load_relaxed(&vg_os_counts.protect);
  v[COST_REMAP] = load_relaxed(&vg_os_counts.remap);
}

unsigned long cost_total_now(void) {
  unsigned long v[COST_NCOUNT], s = 0;
  read_counts(v);
  for (int k = 0; k < COST_NCOUNT; k++) s += v[k];
  return s;
}

const char *cost_tunables_forbid(void) {
  /* Fixed thresholds stop the learning the bound relies on: at a fixed
   * trim_threshold every free that leaves more dirty bytes purges them, as
   * asked.  mallopt(M_TRIM_THRESHOLD or M_MMAP_THRESHOLD) and VIGIL_OPTIONS
   * both fix them. */
  if (load_relaxed(&vg_opt_thresholds_fixed)) return "the thresholds are fixed (mallopt or VIGIL_OPTIONS)";
  /* decay_ms=0 purges the aged pages on every free: no bound per tick. */
  if (vg_option(OPT_decay_ms) == 0) return "decay_ms is 0";
  return NULL;
}

void cost_tunables_changed(struct cost *c) {
  const char *why = cost_tunables_forbid();
  if (why && atomic_exchange(&c->on, 0)) atomic_store(&c->off_why, why);
}

void cost_begin(struct cost *c, int on, const char *why) {
  read_counts(c->base);
  c->t0 = now_ns();
  atomic_store(&c->on, on);
  atomic_store(&c->off_why, on ? NULL : why);
  atomic_store(&c->large_units, 0);
  atomic_store(&c->events, 0);
  atomic_store(&c->spawns, 0);
  atomic_store(&c->excluded, 0);
  atomic_store(&c->moved, 0);
  atomic_store(&c->worst_permille, 0);
}

unsigned long cost_syscalls(const struct cost *c, unsigned long each[COST_NCOUNT]) {
  unsigned long v[COST_NCOUNT], s = 0;
  read_counts(v);
  for (int k = 0; k < COST_NCOUNT; k++) {
    v[k] -= c->base[k];
    s += v[k];
    if (each) each[k] = v[k];
  }
  return s - atomic_load_explicit(&c->excluded, memory_order_relaxed);
}

static unsigned long ticks_at(const struct cost *c, uint64_t now) {
  uint64_t decay_ns = (uint64_t)vg_option(OPT_decay_ms) * 1000000u;
  return 1 + (unsigned long)(now && decay_ns ? (now - c->t0) / decay_ns : 0);
}

unsigned long cost_bound(const struct cost *c, size_t peak, uint64_t now) {
  unsigned long events = load_relaxed(&c->events), spawns = load_relaxed(&c->spawns);
  unsigned long rounds = 2 + events + ticks_at(c, now) * (1 + spawns);
  return COST_W + load_relaxed(&c->large_units) / COST_UNIT + COST_S * events + COST_R * rounds * (peak + 1);
}

void cost_describe(const struct cost *c, size_t peak, char *buf, size_t cap) {
  unsigned long e[COST_NCOUNT];
  unsigned long s = cost_syscalls(c, e);
  uint64_t now = now_ns();
  unsigned long events = load_relaxed(&c->events), spawns = load_relaxed(&c->spawns);
  snprintf(buf, cap,
           "syscalls %lu (map %lu, munmap %lu, madvise %lu, mprotect %lu, mremap %lu), bound %lu = %u + %u x %.2f "
           "large ops + %u x %lu events + %u x %lu rounds x (%zu peak pages + 1) [%lu decay ticks in %.1f ms, "
           "%lu spawns]; realloc moved %zu bytes",
           s, e[COST_MAP], e[COST_UNMAP], e[COST_MADVISE], e[COST_PROTECT], e[COST_REMAP], cost_bound(c, peak, now),
           COST_W, COST_K, (double)load_relaxed(&c->large_units) / (double)(COST_K * COST_UNIT), COST_S, events, COST_R,
           2 + events + ticks_at(c, now) * (1 + spawns), peak, ticks_at(c, now), (double)(now - c->t0) / 1e6,
           spawns, load_relaxed(&c->moved));
}

int cost_check(const struct cost *c, size_t peak, char *why, size_t cap) {
  unsigned long used = cost_syscalls(c, NULL);
  /* The clock only when the bound without its later ticks is crossed. */
  if (used <= cost_bound(c, peak, 0) || used <= cost_bound(c, peak, now_ns())) return 0;
  int n = snprintf(why, cap, "cost: over the syscall bound: ");
  cost_describe(c, peak, why + n, cap - (size_t)n);
  return 1;
}

void cost_report(const struct cost *c, const char *target, size_t nops, size_t peak) {
  static int want = -1;
  if (want < 0) want = getenv("VIGIL_COST_REPORT") != NULL;
  if (!want) return;
  char buf[512];
  cost_describe(c, peak, buf, sizeof buf);
  int on = atomic_load(&c->on);
  const char *off = atomic_load(&c->off_why);
  fprintf(stderr, "cost: %s: %zu ops: %s; worst chain moved %.2f x its credit%s%s\n", target, nops, buf,
          load_relaxed(&c->worst_permille) / 1000.0, on ? "" : "; syscall bound off: ", on ? "" : off);
}

/* ---- the page footprint ---- */
void cost_pages_account(struct cost_pages *pg, const struct mblock *b, int sign) {
  size_t pages = 0;
  if (b->large) return; /* paid per op */
  if (b->usable > VG_SMALL_MAX || b->align > VG_PAGE) {
    /* A span; an alignment above a page may cost up to a segment's worth. */
    pages = (b->usable + VG_PAGE - 1) / VG_PAGE + (b->align > VG_PAGE ? b->align / VG_PAGE : 0);
  } else {
    /* A small block: one more run of its class when its runs are full.
     * Those pages stay counted: the heap keeps them. */
    unsigned cls = size_class(b->usable ? b->usable : 1);
    unsigned run = class_pages(cls), per_run = (unsigned)(run * VG_PAGE / class_size(cls));
    pg->per_class[cls] = (uint16_t)(pg->per_class[cls] + sign);
    unsigned runs = (pg->per_class[cls] + per_run - 1) / per_run;
    if (sign < 0 || runs <= pg->runs[cls]) return;
    pages = (size_t)(runs - pg->runs[cls]) * run;
    pg->runs[cls] = (uint16_t)runs;
  }
  if (sign > 0) {
    pg->now += pages;
    if (pg->now > pg->peak) pg->peak = pg->now;
  } else {
    pg->now -= pages;
  }
}

/* ---- realloc chains ---- */
static size_t sat_add(size_t a, size_t b) { return a + b < a ? SIZE_MAX : a + b; }

void cost_chain_start(struct mblock *b) {
  b->credit = b->req;
  b->moved = 0;
}

int cost_chain_step(struct cost *c, struct mblock *b, const struct mblock *old, char *why, size_t cap) {
  b->credit = sat_add(old->credit, b->req > old->req ? b->req - old->req : old->req - b->req);
  b->moved = old->moved;
  if (b->p == old->p) return 0;
  size_t n = b->req < old->req ? b->req : old->req;
  b->moved = sat_add(b->moved, n);
  atomic_fetch_add_explicit(&c->moved, n, memory_order_relaxed);
  unsigned permille = b->credit ? (unsigned)((double)b->moved * 1000.0 / (double)b->credit) : 0;
  unsigned w = load_relaxed(&c->worst_permille);
  while (permille > w && !atomic_compare_exchange_weak(&c->worst_permille, &w, permille)) {
  }
  if (b->credit > SIZE_MAX / COST_MOVE_C || b->moved <= COST_MOVE_C * b->credit) return 0;
  snprintf(why, cap,
           "cost: realloc moved this chain %zu bytes, bound %u x credit %zu (its first request plus every |new - old|); "
           "this move %zu bytes, %zu -> %zu",
           b->moved, COST_MOVE_C, b->credit, n, old->req, b->req);
  return 1;
}

unsigned long cost_large_op(const struct mblock *old, const struct mblock *b) {
  const unsigned long full = COST_K * COST_UNIT;
  if (!old || !b || old->p != b->p || !old->large || !old->usable) return full;
  /* In place: headroom is committed an eighth more than asked and a block
   * is shrunk only below half, so an op earns K in proportion to its step. */
  size_t step = b->req > old->req ? b->req - old->req : old->req - b->req;
  if (step >= old->usable / 8) return full;
  return (unsigned long)((double)full * 8.0 * (double)step / (double)old->usable);
}

/* A look at vigil's large-block table: as vigil's own code, which memcheck
 * does not report (src/annotate.h). */
int cost_is_large(const void *p) {
  if (p == NULL) return 0;
  vg_ann_enter();
  int large = vg_large_usable(p) != 0;
  vg_ann_leave();
  return large;
}
