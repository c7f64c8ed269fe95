/* The replay main: runs files and folders through a target's
 * LLVMFuzzerTestOneInput, with any compiler and no sanitizer or fuzzing
 * runtime.  `make check`, Valgrind and QEMU use it, and every crash that
 * `make fuzz` saves is reproduced with it.
 *
 *   replay [-q] [-n N] FILE|DIR...     run each input (N times)
 *   replay -A OUTDIR FILE|DIR...       only write each input's binary form
 *
 * Folders are walked recursively in byte order of names, so a replay is the
 * same on every machine.  NOTES, README*, *.md, *.repro.sh and dot files are
 * not inputs.  A file ending in .ops is the text form (fuzz/FORMAT.md: one
 * op per line as vigil-ops prints it, `#` comments, `bytes` lines first): it
 * is assembled with prog_parse_bytes, prog_parse and prog_encode first, and
 * a bad line is "FILE:LINE: message" and exit 2.
 *
 * A failing input kills the process (the oracle prints the divergence, then
 * aborts); a signal handler names the file first and re-raises, so the exit
 * status is still the signal's. */
/* 64-bit inode numbers and sizes on 32-bit targets too (readdir and stat
 * otherwise fail with EOVERFLOW on large host file systems under QEMU). */
#define _FILE_OFFSET_BITS 64

#include "program.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_DEPTH 32

static int quiet;
static unsigned long repeat = 1;
static const char *assemble_dir; /* -A */
static unsigned long inputs;

/* ---- naming the input that crashed ---- */
static pid_t main_pid;
static volatile sig_atomic_t have_current;
static char current[4096];

static void put(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w, n -= (size_t)w;
  }
}

static void on_fatal(int sig) {
  /* Only the replaying process: a target's forked child may die on purpose. */
  if (getpid() == main_pid && have_current) {
    put("replay: signal ");
    put(sig == SIGABRT ? "SIGABRT" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
        : sig == SIGILL ? "SIGILL" : sig == SIGFPE ? "SIGFPE" : "?");
    put(" while running ");
    put(current);
    put("\n");
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_handlers(void) {
  static const int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sa.sa_flags = (int)(SA_RESETHAND | SA_NODEFER);
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

/* ---- reading inputs ---- */
static void die(const char *path, const char *what) {
  fprintf(stderr, "replay: %s: %s\n", path, what);
  exit(2);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Files in a corpus folder that are not inputs. */
static int skipped(const char *name) {
  return name[0] == '.' || strcmp(name, "NOTES") == 0 || strncmp(name, "README", 6) == 0 ||
         ends_with(name, ".md") || ends_with(name, ".repro.sh");
}

static uint8_t *read_binary(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die(path, strerror(errno));
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) die(path, "out of memory");
  for (;;) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    cap *= 2;
    if (!(buf = realloc(buf, cap))) die(path, "out of memory");
  }
  if (ferror(f)) die(path, "read error");
  fclose(f);
  *len = n;
  return buf;
}

static int same_op(const struct op *a, const struct op *b) {
  return a->kind == b->kind && a->slot == b->slot && a->thread == b->thread && a->mailbox == b->mailbox &&
         a->byte == b->byte && a->count == b->count && a->param == b->param && a->value == b->value &&
         a->size == b->size && a->nmemb == b->nmemb && a->align == b->align;
}

/* The text form: every op line becomes its explicit encoding; `bytes` lines
 * (a target's own leading bytes: corrupt's plan, options' string) come
 * first and are copied as they are. */
static uint8_t *assemble(const char *path, size_t *len) {
  FILE *f = fopen(path, "r");
  if (!f) die(path, strerror(errno));
  size_t cap = 1024, n = 0, nops = 0, lineno = 0, linecap = 0;
  uint8_t *buf = malloc(cap);
  char *line = NULL, err[256];
  if (!buf) die(path, "out of memory");
  ssize_t linelen;
  while ((linelen = getline(&line, &linecap, f)) >= 0) {
    struct op op, back;
    lineno++;
    while (cap - n < (size_t)linelen + 1) /* a line holds fewer bytes than chars */
      if (!(buf = realloc(buf, cap *= 2))) die(path, "out of memory");
    err[0] = 0;
    int nb = prog_parse_bytes(line, buf + n, cap - n, err, sizeof err);
    if (nb >= 0 || err[0]) {
      if (nb < 0 || nops > 0) {
        fprintf(stderr, "%s:%zu: %s\n", path, lineno, nb < 0 ? err : "bytes must come before the first op");
        exit(2);
      }
      n += (size_t)nb;
      continue;
    }
    int r = prog_parse(line, &op, err, sizeof err);
    if (r == 0) continue;
    if (r < 0) {
      fprintf(stderr, "%s:%zu: %s\n", path, lineno, err);
      exit(2);
    }
    if (++nops > PROG_MAX_OPS) {
      fprintf(stderr, "%s:%zu: more than %d ops (the decoder stops there)\n", path, lineno, PROG_MAX_OPS);
      exit(2);
    }
    size_t w;
    while ((w = prog_encode(&op, buf + n, cap - n)) == 0) {
      cap *= 2;
      if (!(buf = realloc(buf, cap))) die(path, "out of memory");
    }
    /* The encoding must decode to the same op, or the file means something
     * other than what it says. */
    if (prog_decode(buf + n, w, &back, 1, NULL) != 1 || !same_op(&op, &back)) {
      fprintf(stderr, "%s:%zu: op does not survive encoding (program.c bug)\n", path, lineno);
      exit(2);
    }
    n += w;
  }
  free(line);
  fclose(f);
  *len = n;
  return buf;
}

/* ---- one input ---- */
static void write_binary(const char *path, const uint8_t *data, size_t len) {
  /* OUTDIR/<path with '/' as '_', .ops dropped>: distinct paths, distinct names. */
  char name[4096];
  size_t k = 0;
  const char *p = path;
  while (*p == '.' || *p == '/') p++; /* no dot file from ./ or ../ */
  for (; *p && k + 1 < sizeof name; p++) name[k++] = *p == '/' ? '_' : *p;
  name[k] = 0;
  if (ends_with(name, ".ops")) name[k - 4] = 0;
  char out[8192];
  snprintf(out, sizeof out, "%s/%s", assemble_dir, name);
  FILE *f = fopen(out, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) die(out, strerror(errno));
  if (!quiet) printf("wrote %s (%zu bytes)\n", out, len);
}

static void run_file(const char *path) {
  size_t len;
  uint8_t *raw = ends_with(path, ".ops") ? assemble(path, &len) : read_binary(path, &len);
  inputs++;
  if (assemble_dir) {
    write_binary(path, raw, len);
    free(raw);
    return;
  }
  /* An exact-size copy, as the fuzzers pass it, so a sanitizer build sees
   * any read past the end. */
  uint8_t *data = malloc(len ? len : 1);
  if (!data) die(path, "out of memory");
  memcpy(data, raw, len);
  free(raw);
  snprintf(current, sizeof current, "%s", path);
  have_current = 1;
  for (unsigned long i = 0; i < repeat; i++) LLVMFuzzerTestOneInput(data, len);
  have_current = 0;
  free(data);
  if (!quiet) printf("ok %s (%zu bytes)\n", path, len);
  fflush(stdout);
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static void run_path(const char *path, int depth) {
  struct stat st;
  if (stat(path, &st) != 0) die(path, strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    const char *base = strrchr(path, '/');
    if (!skipped(base ? base + 1 : path)) run_file(path);
    return;
  }
  if (depth >= MAX_DEPTH) die(path, "folders nested too deep (a symlink loop?)");
  struct dirent **names;
  int n = scandir(path, &names, NULL, by_name);
  if (n < 0) die(path, strerror(errno));
  for (int i = 0; i < n; i++) {
    if (!skipped(names[i]->d_name)) {
      char sub[4096];
      size_t pl = strlen(path);
      snprintf(sub, sizeof sub, "%s%s%s", path, pl && path[pl - 1] == '/' ? "" : "/", names[i]->d_name);
      run_path(sub, depth + 1);
    }
    free(names[i]);
  }
  free(names);
}

static void usage(const char *argv0, int status) {
  fprintf(status ? stderr : stdout,
          "usage: %s [-q] [-n N] FILE|DIR...   run inputs through the target\n"
          "       %s -A OUTDIR FILE|DIR...     write each input's binary form to OUTDIR\n"
          "  -q    no line per input, only the summary\n"
          "  -n N  run each input N times (threads and fork targets)\n"
          "Folders are walked recursively in name order; *.ops files are the text form.\n",
          argv0, argv0);
  exit(status);
}

int main(int argc, char **argv) {
  int c;
  char *end;
  while ((c = getopt(argc, argv, "+qn:A:h")) != -1) {
    switch (c) {
      case 'q': quiet = 1; break;
      case 'n':
        errno = 0;
        repeat = strtoul(optarg, &end, 10);
        if (errno || *end || repeat == 0) die(optarg, "-n wants a positive number");
        break;
      case 'A': assemble_dir = optarg; break;
      case 'h': usage(argv[0], 0); break;
      default: usage(argv[0], 2);
    }
  }
  if (optind >= argc) usage(argv[0], 2);
  main_pid = getpid();
  if (!assemble_dir) {
    install_handlers();
    /* libFuzzer passes the whole command line; so do we (a copy: the
     * target may consume arguments). */
    int iargc = argc;
    char **iargv = argv;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&iargc, &iargv);
  } else if (mkdir(assemble_dir, 0777) != 0 && errno != EEXIST) {
    die(assemble_dir, strerror(errno));
  }
  for (int i = optind; i < argc; i++) run_path(argv[i], 0);
  if (assemble_dir) printf("assembled %lu inputs into %s\n", inputs, assemble_dir);
  else if (repeat > 1) printf("replayed %lu inputs (%lu times each)\n", inputs, repeat);
  else printf("replayed %lu inputs\n", inputs);
  return 0;
}
