/* vigil-ops: shows op programs (fuzz/FORMAT.md) as text and turns the text
 * form back into the byte format, so regressions can be written by hand.
 *
 *   vigil-ops print [--skip N | --target T] FILE...
 *                                        binary input -> one op per line
 *   vigil-ops asm [-o OUT] FILE          text -> binary (explicit encodings)
 *
 * FILE may be - for stdin.  print reads a FILE named *.ops as text and shows
 * it the same way.  Everything goes through fuzz/program.h: the decoder the
 * fuzzers use, its explicit encoder and its text form, so for any binary X,
 * asm(print(X)) decodes to the same ops as X (tests/ops_roundtrip.sh).
 * Exit: 0 ok, 1 bad input (missing file, parse error, ...), 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "program.h"

#define RAW_MAX 512 /* leading bytes a text input may give with `bytes` */

/* The longest op is 20 bytes (memalign family: kind, slot, 1+8 align,
 * 1+8 size), so this many bytes always hold PROG_MAX_OPS ops. */
#define OP_BYTES_MAX 32
#define READ_CAP ((size_t)PROG_MAX_OPS * OP_BYTES_MAX)
/* print --skip N: a target's own leading bytes (corrupt's selector, ...). */
#define SKIP_MAX ((size_t)1 << 20)
/* Non-regular inputs (pipes, devices) are counted up to this many bytes. */
#define COUNT_MAX ((unsigned long long)1 << 30)

static const char *prog = "vigil-ops";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s print [--skip N | --target T] FILE...   show binary inputs as ops, one per line\n"
          "                                    (--target: skip target T's own leading bytes)\n"
          "       %s asm [-o OUT] FILE          turn the text form into a binary input\n"
          "FILE may be - (stdin); print reads FILE.ops as text.  See fuzz/FORMAT.md.\n",
          prog, prog);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static FILE *open_in(const char *path, const char *mode) {
  if (strcmp(path, "-") == 0) return stdin;
  FILE *f = fopen(path, mode);
  if (!f) fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
  return f;
}
static void close_in(FILE *f) {
  if (f != stdin) fclose(f);
}

/* ---- print ---------------------------------------------------------------- */

/* Reads the first cap bytes of path into buf (*kept of them) and the file's
 * total length into *total (*more_than: the count stopped at COUNT_MAX).
 * Returns 0, or -1 after a message. */
static int read_binary(const char *path, uint8_t *buf, size_t cap, size_t *kept, unsigned long long *total,
                       int *more_than) {
  FILE *f = open_in(path, "rb");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap, f);
  unsigned long long t = n;
  *more_than = 0;
  if (!ferror(f) && n == cap) {
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
      if ((unsigned long long)st.st_size > t) t = (unsigned long long)st.st_size;
    } else {
      static uint8_t scratch[1 << 16];
      size_t m;
      while (t < COUNT_MAX && (m = fread(scratch, 1, sizeof scratch, f)) > 0) t += m;
      if (t >= COUNT_MAX && !feof(f)) *more_than = 1;
    }
  }
  if (ferror(f)) {
    fprintf(stderr, "%s: %s: read error: %s\n", prog, path, strerror(errno));
    close_in(f);
    return -1;
  }
  close_in(f);
  *kept = n;
  *total = t;
  return 0;
}

/* Reads the text form of path into ops.  Errors print FILE:LINE: message.
 * Returns the op count, or -1. */
static long parse_text(const char *path, struct op *ops, size_t max, uint8_t *raw, size_t *nraw);

/* Prints ops[0..n) one per line.  A spawn or fork in the main stream owns
 * the next `ops=N` ops (as many as exist), which are indented by two spaces.
 * A spawn or fork inside such a sub-program is ignored by the runner and its
 * ops run inline, so sub-programs never nest. */
static void print_ops(const struct op *ops, size_t n) {
  size_t end = 0; /* end (exclusive) of the open sub-program */
  char line[256];
  for (size_t i = 0; i < n; i++) {
    int inside = i < end;
    prog_format(&ops[i], line, sizeof line);
    printf("%s%s", inside ? "  " : "", line);
    /* The notes hold no `key=`: prog_parse would read one even in a comment. */
    if (ops[i].kind == OP_SPAWN || ops[i].kind == OP_FORK) {
      size_t want = i + 1 + ops[i].count;
      if (inside) {
        printf("  # nested: ignored, its ops run inline");
      } else {
        end = want < n ? want : n;
        if (end < want) printf("  # only %zu of its %u ops follow", end - (i + 1), ops[i].count);
      }
    }
    putchar('\n');
  }
}

static int cmd_print(int argc, char **argv) {
  size_t skip = 0;
  const char *target = NULL; /* --target: the skip comes from each file */
  int nfiles = 0, rc = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--target") == 0 || strcmp(argv[i], "-t") == 0) {
      if (i + 1 >= argc) return usage(stderr), 2;
      target = argv[++i];
    } else if (strcmp(argv[i], "--skip") == 0 || strcmp(argv[i], "-s") == 0) {
      unsigned long long v;
      if (i + 1 >= argc) return usage(stderr), 2;
      if (!prog_number(argv[++i], 0, SKIP_MAX, &v)) {
        fprintf(stderr, "%s: --skip takes a byte count up to %zu\n", prog, SKIP_MAX);
        return 2;
      }
      skip = (size_t)v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "%s: print: unknown option %s\n", prog, argv[i]);
      return usage(stderr), 2;
    } else {
      nfiles++;
    }
  }
  if (nfiles == 0) return usage(stderr), 2;

  static uint8_t buf[READ_CAP + SKIP_MAX];
  static struct op ops[PROG_MAX_OPS];
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--skip") == 0 || strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--target") == 0 ||
        strcmp(argv[i], "-t") == 0) {
      i++;
      continue;
    }
    const char *path = argv[i];
    if (strcmp(path, "-") != 0 && ends_with(path, ".ops")) {
      static uint8_t raw[RAW_MAX];
      size_t nraw = 0;
      long n = parse_text(path, ops, PROG_MAX_OPS, raw, &nraw);
      if (n < 0) {
        rc = 1;
        continue;
      }
      printf("# %s: %ld ops (text form)\n", path, n);
      if (nraw) {
        printf("bytes");
        for (size_t k = 0; k < nraw; k++) printf(" %u", raw[k]);
        printf("\n");
      }
      print_ops(ops, (size_t)n);
      continue;
    }
    size_t kept;
    unsigned long long total;
    int more_than;
    if (read_binary(path, buf, (target ? SKIP_MAX : skip) + READ_CAP, &kept, &total, &more_than) < 0) {
      rc = 1;
      continue;
    }
    if (target) skip = prog_header_len(target, buf, kept);
    if (kept < skip) {
      fprintf(stderr, "%s: %s: only %zu bytes, cannot skip %zu\n", prog, path, kept, skip);
      rc = 1;
      continue;
    }
    size_t used;
    size_t n = prog_decode(buf + skip, kept - skip, ops, PROG_MAX_OPS, &used);
    unsigned long long trailing = total - skip - used;
    printf("# %s: %zu ops from %s%llu bytes (%s%llu trailing bytes ignored)\n", path, n, more_than ? "over " : "",
           total, more_than ? "over " : "", trailing);
    if (skip) { /* the target's own leading bytes, as the text form writes them */
      printf("bytes");
      for (size_t k = 0; k < skip; k++) printf(" %u", buf[k]);
      printf("\n");
    }
    if (n == PROG_MAX_OPS && trailing > 0) {
      printf("# capped at %d ops (PROG_MAX_OPS): the decoders stop there\n", PROG_MAX_OPS);
      fprintf(stderr, "%s: %s: capped at %d ops; %s%llu bytes after them are not decoded\n", prog, path,
              PROG_MAX_OPS, more_than ? "over " : "", trailing);
    }
    print_ops(ops, n);
  }
  return rc;
}

/* ---- asm ------------------------------------------------------------------ */

/* prog_parse's messages quote the input: keep binary garbage off the terminal. */
static void print_clean(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f) fputc(c, stderr);
    else fprintf(stderr, "\\x%02x", c);
  }
}

static long parse_text(const char *path, struct op *ops, size_t max, uint8_t *raw, size_t *nraw) {
  FILE *f = open_in(path, "r");
  if (!f) return -1;
  char *line = NULL, err[200];
  size_t cap = 0, n = 0;
  unsigned long lineno = 0;
  ssize_t len;
  long result = -1;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (strlen(line) != (size_t)len) {
      fprintf(stderr, "%s:%lu: NUL byte in the text (a binary input? 'vigil-ops print' shows one)\n", path,
              lineno);
      goto out;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    struct op o;
    err[0] = 0;
    int nb = prog_parse_bytes(line, raw + *nraw, RAW_MAX - *nraw, err, sizeof err);
    if (nb >= 0 || err[0]) {
      if (nb < 0 || n > 0) {
        fprintf(stderr, "%s:%lu: %s\n", path, lineno, nb < 0 ? err : "bytes must come before the first op");
        goto out;
      }
      *nraw += (size_t)nb;
      continue;
    }
    int r = prog_parse(line, &o, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "%s:%lu: ", path, lineno);
      print_clean(err);
      fputc('\n', stderr);
      goto out;
    }
    if (r == 0) continue;
    if (n == max) {
      fprintf(stderr, "%s:%lu: more than %zu ops (PROG_MAX_OPS): the decoders would stop before this one\n",
              path, lineno, max);
      goto out;
    }
    ops[n++] = o;
  }
  if (ferror(f)) {
    fprintf(stderr, "%s: read error: %s\n", path, strerror(errno));
    goto out;
  }
  result = (long)n;
out:
  free(line);
  close_in(f);
  return result;
}

static int cmd_asm(int argc, char **argv) {
  const char *out = NULL, *in = NULL;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0) {
      if (i + 1 >= argc) return usage(stderr), 2;
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "%s: asm: unknown option %s\n", prog, argv[i]);
      return usage(stderr), 2;
    } else if (in) {
      fprintf(stderr, "%s: asm takes one FILE\n", prog);
      return usage(stderr), 2;
    } else {
      in = argv[i];
    }
  }
  if (!in) return usage(stderr), 2;
  if (!out && isatty(STDOUT_FILENO)) {
    fprintf(stderr, "%s: asm writes binary: give -o OUT or redirect stdout\n", prog);
    return 2;
  }

  static struct op ops[PROG_MAX_OPS];
  static uint8_t bin[READ_CAP + RAW_MAX];
  size_t len = 0;
  long n = parse_text(in, ops, PROG_MAX_OPS, bin, &len);
  if (n < 0) return 1;
  if (n == 0) fprintf(stderr, "%s: %s: no ops (an empty program)\n", prog, in);
  for (long i = 0; i < n; i++) {
    size_t k = prog_encode(&ops[i], bin + len, sizeof bin - len);
    if (k == 0) { /* cannot happen: READ_CAP holds PROG_MAX_OPS of the longest op */
      fprintf(stderr, "%s: %s: encoding overflow at op %ld\n", prog, in, i);
      return 1;
    }
    len += k;
  }
  FILE *f = out ? fopen(out, "wb") : stdout;
  if (!f) {
    fprintf(stderr, "%s: %s: %s\n", prog, out, strerror(errno));
    return 1;
  }
  int bad = fwrite(bin, 1, len, f) != len;
  bad |= out ? fclose(f) != 0 : fflush(f) != 0;
  if (bad) {
    fprintf(stderr, "%s: %s: write error: %s\n", prog, out ? out : "stdout", strerror(errno));
    struct stat st; /* drop a partial file, never a device (-o /dev/full) */
    if (out && stat(out, &st) == 0 && S_ISREG(st.st_mode)) remove(out);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr), 2;
  int rc;
  if (strcmp(argv[1], "print") == 0) rc = cmd_print(argc - 2, argv + 2);
  else if (strcmp(argv[1], "asm") == 0) rc = cmd_asm(argc - 2, argv + 2);
  else if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) return usage(stdout), 0;
  else {
    fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
    return usage(stderr), 2;
  }
  if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
    fprintf(stderr, "%s: write error on stdout: %s\n", prog, strerror(errno));
    return 1;
  }
  return rc;
}
