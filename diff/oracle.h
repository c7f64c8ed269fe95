/* The differential oracle: runs an op program against vigil (the prefixed
 * build) under the reference model, and, where the program is sequential,
 * against glibc's malloc in the same process, comparing outcome classes
 * (NULL or not, errno, return values), never addresses.  On a divergence it
 * prints the op index, the op and both outcomes, and aborts. */
#ifndef VIGIL_ORACLE_H
#define VIGIL_ORACLE_H

#include <stddef.h>

#include "model.h"
#include "program.h"

struct oracle_config {
  const char *target;
  int compare_glibc;  /* sequential programs: also run every op on glibc */
  int allow_threads;  /* spawn/join/pass/recv; otherwise they are skipped */
  int allow_fork;     /* fork; otherwise skipped (its ops run inline) */
  int check_contents; /* 0 for the corrupt target, which scribbles on purpose */
  int check_leaks;    /* in-use bytes return to where they started */
  /* Other threads call vigil behind the program's back (the fork target's
   * noise): the syscall bound is then checked in fork children only. */
  int background_allocs;
  /* Called before op `index` runs in the main stream (corrupt target). */
  void (*before_op)(size_t index, struct model *m, void *ctx);
  void *ctx;
};

void oracle_run(const struct op *ops, size_t n, const struct oracle_config *cfg);
/* Decodes an input with the one decoder and runs it (not reentrant). */
void oracle_run_input(const uint8_t *data, size_t size, const struct oracle_config *cfg);

/* Reports a divergence and aborts. */
_Noreturn void oracle_fail(const char *target, size_t index, const struct op *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Puts vigil's tunables and glibc's mallopt settings back to their defaults
 * (run after every program, so inputs stay independent). */
void oracle_reset_tunables(void);

#endif
