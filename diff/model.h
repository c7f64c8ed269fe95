/* The reference model: an executable specification of what every block must
 * be.  It records, per slot, the block's address, requested size, required
 * alignment and what its first `valid` bytes must hold, and checks after each
 * op: alignment, usable size >= request, no overlap with any other live
 * block, and contents preserved (realloc included), calloc zeroed. */
#ifndef VIGIL_MODEL_H
#define VIGIL_MODEL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "program.h"

/* Contents are checked over at most this many bytes of a block. */
#define MODEL_CHECK_MAX ((size_t)1 << 20)

enum content { C_UNKNOWN, C_ZERO, C_FILL };

struct mblock {
  unsigned char *p; /* NULL: empty */
  size_t req;       /* requested size */
  size_t usable;    /* what the allocator reported */
  size_t align;     /* required alignment */
  size_t valid;     /* bytes whose contents are known */
  unsigned char fill;
  unsigned char content; /* enum content */
  unsigned char large;   /* in a mapping of its own (vigil says so) */
  size_t credit, moved;  /* its realloc chain (cost.h) */
};

struct model {
  struct mblock slot[PROG_SLOTS];
  struct mblock mailbox[PROG_MAILBOXES];
  /* Which entries may be live, a bit each (live[0]: slot, live[1]:
   * mailbox): set whenever an entry's p is, so that the overlap check
   * visits only those.  A set bit over an empty entry is harmless (a
   * corruption case empties an entry by hand, fuzz/corrupt.c). */
  uint64_t live[2];
  pthread_mutex_t lock; /* guards the table: threads check overlap against all of it */
  struct cost_pages pages; /* what the live blocks need, under the lock (cost.h) */
};

void model_init(struct model *m);
/* Checks a block an allocator just returned and records it in *where (an
 * entry of m's slot or mailbox table), replacing what was there.
 * Returns NULL when all is well, else a description of the violation. */
const char *model_add(struct model *m, struct mblock *where, const struct mblock *b);
/* Takes the block out of *where (which becomes empty) and returns it. */
struct mblock model_take(struct model *m, struct mblock *where);
/* Moves the block in *from to the empty *to (a pass or recv: the same
 * block, still live).  The caller holds m->lock. */
void model_move_locked(struct model *m, struct mblock *to, struct mblock *from);
/* Verifies the known contents; NULL when they hold. */
const char *model_verify(const struct mblock *b);
/* Writes `byte` over the block (up to MODEL_CHECK_MAX) and records it. */
void model_fill(struct mblock *b, unsigned char byte);
/* The bytes model_fill has written and model_verify has compared in this
 * process since model_count_bytes (called before any program runs; the
 * fuzzers never call it, and count nothing): the programs' own memory
 * work, which bench/fuzz_bench.py prices in an input's floor (replay -b). */
void model_count_bytes(void);
void model_bytes(uint64_t *filled, uint64_t *checked);

#endif
