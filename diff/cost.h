/* The cost oracle: what a program may cost vigil, checked after every op
 * next to the outcome checks (oracle.c).  Two measures:
 *
 *   - the syscalls vigil makes (vg_os_counts: map, unmap, madvise, protect,
 *     remap; not futex, which only contention causes), against an
 *     amortized bound built from what the program did (cost_bound);
 *   - the bytes realloc moves, seen from outside: a realloc that returns
 *     another address moved min(old request, new request) bytes.  Each
 *     realloc chain (a block followed through its reallocs) may move at most
 *     COST_MOVE_C times its credit, its first request plus every |new - old|.
 *
 * The derivation of every constant is in cost.c and fuzz/README.md ("The
 * cost oracle"). */
#ifndef VIGIL_COST_H
#define VIGIL_COST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct mblock;

/* Bytes a realloc chain may move per byte of its credit. */
#define COST_MOVE_C 4u
/* The syscall bound: W + K*large_ops + S*events + R*rounds*(peak_pages+1),
 * rounds = 2 + events + ticks*(1 + spawns); large_ops counts an in-place
 * resize of a large block by |new - old| / (old usable / 8), at most 1. */
#define COST_W 16u /* warm-up: the program's first segment, metadata, the large table */
#define COST_K 8u  /* per op on a block in its own mapping, or a request that may map one */
#define COST_S 16u /* per trim, spawn and fork: heap set-up, a thread's exit, a full purge */
#define COST_R 2u  /* per 64 KiB page per purge round: its madvise, its re-commit (remap mode) */

/* The syscall counters the bound covers, in vg_os_counts order. */
enum { COST_MAP, COST_UNMAP, COST_MADVISE, COST_PROTECT, COST_REMAP, COST_NCOUNT };

/* Small-class count the page footprint tracks (vigil's VG_NCLASSES). */
#define COST_CLASSES 44

/* The 64 KiB pages the program's blocks need at the least, kept by the
 * model under its lock (model_add, model_take) with its peak: the spans
 * live now, and for each small class the most runs its blocks ever needed
 * at once (a thread heap keeps a class's page once it has one). */
struct cost_pages {
  size_t now, peak;
  uint16_t per_class[COST_CLASSES]; /* live small blocks of each class */
  uint16_t runs[COST_CLASSES];      /* the most runs they needed */
};

struct cost {
  _Atomic int on;               /* the syscall bound is checked */
  const char *_Atomic off_why;  /* why not, for the report */
  unsigned long base[COST_NCOUNT];
  uint64_t t0; /* CLOCK_MONOTONIC ns when counting started */
  _Atomic unsigned long large_units; /* K per large op, in 1/COST_UNIT syscalls */
  _Atomic unsigned long events, spawns;
  _Atomic unsigned long excluded; /* syscalls a target hook made (corrupt), not the program */
  _Atomic size_t moved;           /* bytes moved by every chain, for the messages */
  _Atomic unsigned worst_permille; /* the highest moved/credit of a chain, x1000 */
};

/* Starts counting now.  on = 0 (with why) leaves only the moved-bytes bound. */
void cost_begin(struct cost *c, int on, const char *why);
/* NULL when the tunables allow the syscall bound; else why not. */
const char *cost_tunables_forbid(void);
/* After a tune op: turns the syscall bound off for the rest of the program
 * if the tunables now forbid it. */
void cost_tunables_changed(struct cost *c);
/* Syscalls since cost_begin; fills each[] if not NULL. */
unsigned long cost_syscalls(const struct cost *c, unsigned long each[COST_NCOUNT]);
unsigned long cost_total_now(void); /* the raw sum, for excluding a hook's calls */
/* The bound; now_ns = 0 counts the first decay tick only. */
unsigned long cost_bound(const struct cost *c, size_t peak_pages, uint64_t now_ns);
/* 0 within the bound; otherwise 1, and why[] says by how much. */
int cost_check(const struct cost *c, size_t peak_pages, char *why, size_t cap);
/* The counts, for any failure message (the moved-bytes one too). */
void cost_describe(const struct cost *c, size_t peak_pages, char *buf, size_t cap);
/* One line per program on stderr with VIGIL_COST_REPORT=1 (calibration). */
void cost_report(const struct cost *c, const char *target, size_t nops, size_t peak_pages);

#define COST_UNIT 1024ul
/* The allowance, in 1/COST_UNIT syscalls, of an op on a large block: old is
 * the block before a realloc (NULL: an allocation, a free (b the block) or
 * a failed request (b NULL)). */
unsigned long cost_large_op(const struct mblock *old, const struct mblock *b);
/* Whether vigil placed p in a mapping of its own (its large table says so). */
int cost_is_large(const void *p);
/* Page footprint of a block entering (sign 1) or leaving (-1) the model. */
void cost_pages_account(struct cost_pages *pg, const struct mblock *b, int sign);

/* A new chain starts at b (credit = its request). */
void cost_chain_start(struct mblock *b);
/* b replaces old through a realloc: carries the chain on and charges the
 * move if the address changed.  Returns 1 when the chain is over its bound
 * (why[] says so). */
int cost_chain_step(struct cost *c, struct mblock *b, const struct mblock *old, char *why, size_t cap);

#endif
