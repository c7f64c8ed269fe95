/* The op program: one byte format (fuzz/FORMAT.md), one decoder, used by
 * every fuzz target, the replay and AFL++ drivers, the oracle and vigil-ops.
 * Decoding never fails: every byte string is a program, and a truncated one
 * is just shorter.  Nothing here allocates. */
#ifndef VIGIL_PROGRAM_H
#define VIGIL_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#define PROG_SLOTS 64   /* block slots; thread t owns slots [16t, 16t+16) */
#define PROG_THREADS 4  /* thread 0 is the main thread */
#define PROG_MAILBOXES 8
#define PROG_MAX_OPS 4096

enum op_kind {
  OP_MALLOC,
  OP_CALLOC,
  OP_REALLOC,
  OP_REALLOCARRAY,
  OP_FREE,
  OP_MEMALIGN,
  OP_ALIGNED_ALLOC,
  OP_POSIX_MEMALIGN,
  OP_VALLOC,
  OP_PVALLOC,
  OP_USABLE,
  OP_FILL,
  OP_CHECK,
  OP_TRIM,
  OP_TUNE,
  OP_SPAWN,
  OP_JOIN,
  OP_PASS,
  OP_RECV,
  OP_FORK,
  OP_COUNT
};

struct op {
  uint8_t kind;    /* enum op_kind */
  uint8_t slot;    /* < PROG_SLOTS */
  uint8_t thread;  /* SPAWN, JOIN: 1..PROG_THREADS-1 */
  uint8_t mailbox; /* PASS, RECV: < PROG_MAILBOXES */
  uint8_t byte;    /* FILL: the fill byte */
  uint16_t count;  /* SPAWN, FORK: how many of the following ops form the sub-program */
  int param;       /* TUNE: a mallopt parameter */
  int value;       /* TUNE: its value */
  size_t size;     /* bytes (also TRIM's pad) */
  size_t nmemb;    /* CALLOC, REALLOCARRAY */
  size_t align;    /* the memalign family */
};

/* The bytes a fuzz target reads before its op program: corrupt's 4-byte
 * plan; options' length byte and the VIGIL_OPTIONS string after it; none
 * for the other targets (or an unknown name).  At most len. */
size_t prog_header_len(const char *target, const uint8_t *data, size_t len);

/* Decodes up to max ops; returns how many.  *used (if not NULL) gets the
 * number of input bytes consumed. */
size_t prog_decode(const uint8_t *data, size_t len, struct op *ops, size_t max, size_t *used);

/* Encodes one op so that prog_decode gives it back exactly (sizes and
 * alignments use the explicit encodings).  Returns bytes written, 0 if cap
 * is too small. */
size_t prog_encode(const struct op *op, uint8_t *out, size_t cap);

/* One line of text for the op, e.g. "malloc slot=3 size=4096" (no newline).
 * Returns the length (truncated to cap-1). */
size_t prog_format(const struct op *op, char *buf, size_t cap);

/* Parses one line of that text form.  Returns 1 on success, 0 for a blank or
 * comment line, -1 on error (with a message in err). */
int prog_parse(const char *line, struct op *op, char *err, size_t errcap);

const char *prog_op_name(unsigned kind);

/* A whole decimal number from lo to hi, digits only (no sign, no space, no
 * 0x), into *out: 1, or 0 with *out unchanged.  The tools' one parser of
 * numbers on a command line or in the environment. */
int prog_number(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out);

/* The text form's one non-op line, `bytes N N ...`: raw bytes that a
 * target reads before its program (corrupt's plan, options' string).
 * Returns how many bytes it holds (stored in out), or -1 if the line is not
 * a bytes line or a number is not 0..255 (message in err). */
int prog_parse_bytes(const char *line, uint8_t *out, size_t cap, char *err, size_t errcap);

#endif
