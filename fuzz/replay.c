/* The replay main: runs files and folders through a target's
 * LLVMFuzzerTestOneInput, with any compiler and no sanitizer or fuzzing
 * runtime.  `make check`, Valgrind and QEMU use it, and every crash that
 * `make fuzz` saves is reproduced with it.
 *
 *   replay [-q] [-n N] FILE|DIR...     run each input (N times)
 *   replay -A OUTDIR FILE|DIR...       only write each input's binary form
 *   replay -M SECONDS [-s SEED] [-o CRASHDIR] [-t TIMEOUT] [-r RUNS]
 *          [-x MAXLEN] [-q] FILE|DIR...
 *                                      mutate the inputs for SECONDS
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
 * status is still the signal's.
 *
 * -M is a fuzzer for where no fuzzing engine runs (the QEMU targets): no
 * coverage, only random mutations of the inputs, run until the time is up.
 * The mutations come from one PRNG seeded with -s, so a seed and a corpus
 * give the same sequence of inputs.  The input being run is kept where the
 * fatal signal handler (or, for a hang, SIGALRM from alarm()) can reach it,
 * and the handler writes it to CRASHDIR/crash-<hash> (timeout-<hash>) with
 * open/write/close before it re-raises. */
/* 64-bit inode numbers and sizes on 32-bit targets too (readdir and stat
 * otherwise fail with EOVERFLOW on large host file systems under QEMU). */
#define _FILE_OFFSET_BITS 64

#include "model.h"
#include "program.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_DEPTH 32

static int quiet;
static int bytes_line; /* -b */
static unsigned long repeat = 1;
static const char *assemble_dir; /* -A */
static unsigned long inputs;

/* -M: the inputs, in memory. */
struct input {
  uint8_t *data;
  size_t len;
  char *path;
};
static int mutate; /* -M given */
static struct input *pool;
static size_t npool, pool_cap;

/* ---- naming (and, with -M, saving) the input that crashed ---- */
static pid_t main_pid;
static volatile sig_atomic_t have_current;
static char current[4096];
/* -M: the bytes being run, and the file they go to if the process dies:
 * crash_path is CRASHDIR/ followed by room for the name. */
static const uint8_t *volatile cur_data;
static volatile size_t cur_len;
static char crash_path[4096];
static size_t crash_dir_len;

static void put(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w, n -= (size_t)w;
  }
}

/* Writes the input being run to crash_path + "<kind>-<FNV-1a hash>" (so
 * one input found twice keeps its name), and prints where.  Only
 * async-signal-safe calls: it runs in the fatal signal handler. */
static void save_current(const char *kind) {
  int last_of_r = kind[0] == 'i'; /* "input": the last run of -r, saved before it runs */
  uint64_t h = 0xcbf29ce484222325u;
  const uint8_t *d = cur_data;
  size_t len = cur_len;
  for (size_t i = 0; i < len; i++) h = (h ^ d[i]) * 0x100000001b3u;
  char *p = crash_path + crash_dir_len;
  while (*kind) *p++ = *kind++;
  *p++ = '-';
  for (int i = 60; i >= 0; i -= 4) *p++ = "0123456789abcdef"[(h >> i) & 15];
  *p = 0;
  int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  size_t done = 0;
  while (fd >= 0 && done < len) {
    ssize_t w = write(fd, d + done, len - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
  if (fd < 0 || done < len || close(fd) != 0) {
    put("replay: could not save the input to ");
    put(crash_path);
    put("\n");
    return;
  }
  /* (fuzz/run.sh and qemu-targets/fuzz.sh read "input saved to" as a crash) */
  put(last_of_r ? "replay: the last input of -r, saved first to " : "replay: input saved to ");
  put(crash_path);
  put("\n");
}

static void on_fatal(int sig) {
  /* Only the replaying process: a target's forked child may die on purpose. */
  if (getpid() == main_pid && have_current) {
    put("replay: ");
    put(sig == SIGALRM ? "hang (SIGALRM: -t exceeded)" : "signal ");
    put(sig == SIGABRT ? "SIGABRT" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
        : sig == SIGILL ? "SIGILL" : sig == SIGFPE ? "SIGFPE" : "");
    put(" while running ");
    put(current);
    put("\n");
    if (mutate) save_current(sig == SIGALRM ? "timeout" : "crash");
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

/* A target that calls exit() instead of aborting: with -M, a failure even
 * with exit(0). */
static void on_exit_while_running(void) {
  if (getpid() == main_pid && have_current) {
    put("replay: exit() while running ");
    put(current);
    put("\n");
    if (mutate) {
      save_current("crash");
      fflush(NULL);
      _exit(1);
    }
  }
}

static void install_handlers(void) {
  static const int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGALRM};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sa.sa_flags = (int)(SA_RESETHAND | SA_NODEFER);
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
  atexit(on_exit_while_running);
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

static void keep(const char *path, uint8_t *data, size_t len) {
  if (npool == pool_cap) {
    pool_cap = pool_cap ? 2 * pool_cap : 64;
    if (!(pool = realloc(pool, pool_cap * sizeof *pool))) die(path, "out of memory");
  }
  char *copy = strdup(path);
  if (!copy) die(path, "out of memory");
  pool[npool++] = (struct input){data, len, copy};
}

/* Runs one input from an exact-size copy, as the fuzzers pass it, so a
 * sanitizer build sees any read past the end.  WHAT names it if it fails. */
static void run_one(const uint8_t *raw, size_t len, const char *what) {
  uint8_t *data = malloc(len ? len : 1);
  if (!data) die(what, "out of memory");
  memcpy(data, raw, len);
  if (what != current) snprintf(current, sizeof current, "%s", what);
  cur_data = data;
  cur_len = len;
  have_current = 1;
  for (unsigned long i = 0; i < repeat; i++) LLVMFuzzerTestOneInput(data, len);
  have_current = 0;
  free(data);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_file(const char *path) {
  size_t len;
  uint8_t *raw = ends_with(path, ".ops") ? assemble(path, &len) : read_binary(path, &len);
  inputs++;
  if (assemble_dir) {
    write_binary(path, raw, len);
  } else if (mutate) {
    keep(path, raw, len);
    return;
  } else {
    double t0 = now();
    run_one(raw, len, path);
    /* The time of one run: `replay DIR | sort -k5 -g` lists the slowest last. */
    if (!quiet) printf("ok %s (%zu bytes) %.3f ms\n", path, len, (now() - t0) * 1e3 / (double)repeat);
    fflush(stdout);
  }
  free(raw);
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

/* ---- -M: random mutations of the inputs ---- */
static unsigned long mut_seconds;
static unsigned long long mut_seed;
static int have_seed;
static const char *crash_dir = ".";
static unsigned long hang_timeout = 30; /* > the 10-20 s the fork and corrupt targets give a child */
static unsigned long max_runs;          /* 0: until the time is up */
static unsigned long max_len;           /* 0: the longest input, at least 4096 */

static uint64_t rng;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
/* 0..n-1 for n <= 2^32, without a 64-bit division (slow on 32-bit Arm). */
static size_t below(size_t n) { return (size_t)(((rnd() >> 32) * (uint64_t)n) >> 32); }

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static const uint8_t interesting[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255};

/* One mutation of buf[0, len) in place, within cap bytes; returns the new
 * length.  Chunks are at most 32 bytes: about one op of the format. */
static size_t mutate_once(uint8_t *buf, size_t len, size_t cap) {
  uint8_t chunk[32];
  size_t at = below(len + 1), n;
  switch (below(8)) {
    case 0: /* flip a bit */
      if (at < len) buf[at] ^= (uint8_t)(1u << below(8));
      break;
    case 1: /* a random byte */
      if (at < len) buf[at] = (uint8_t)rnd();
      break;
    case 2: /* an interesting byte */
      if (at < len) buf[at] = interesting[below(sizeof interesting)];
      break;
    case 3: /* add or subtract up to 16 */
      if (at < len) buf[at] = (uint8_t)(buf[at] + (rnd() & 1 ? 1 + below(16) : 256 - 1 - below(16)));
      break;
    case 4: /* insert random bytes */
      n = min_size(1 + below(sizeof chunk), cap - len);
      for (size_t i = 0; i < n; i++) chunk[i] = (uint8_t)rnd();
      goto insert;
    case 5: /* erase a chunk */
      n = min_size(1 + below(sizeof chunk), len - at);
      memmove(buf + at, buf + at + n, len - at - n);
      return len - n;
    case 6: /* duplicate a chunk somewhere */
      if (len == 0) break;
      {
        size_t from = below(len);
        n = min_size(min_size(1 + below(sizeof chunk), len - from), cap - len);
        memcpy(chunk, buf + from, n);
      }
    insert:
      memmove(buf + at + n, buf + at, len - at);
      memcpy(buf + at, chunk, n);
      return len + n;
    default: { /* splice: this one's head, another input's tail */
      const struct input *o = &pool[below(npool)];
      size_t from = below(o->len + 1);
      n = min_size(o->len - from, cap - at);
      memcpy(buf + at, o->data + from, n);
      return at + n;
    }
  }
  return len;
}

static void prepare_crash_dir(void) {
  if (mkdir(crash_dir, 0777) != 0 && errno != EEXIST) die(crash_dir, strerror(errno));
  /* room for "/timeout-" and 16 hex digits */
  int n = snprintf(crash_path, sizeof crash_path, "%s/", crash_dir);
  if (n < 0 || (size_t)n + 32 > sizeof crash_path) die(crash_dir, "path too long");
  crash_dir_len = (size_t)n;
}

/* Each input once as it is, then random mutations of them until the time
 * (or -r RUNS) is up.  Returns the exit status; a failure never returns. */
static int run_mutations(void) {
  if (npool == 0) {
    fprintf(stderr, "replay: -M: no inputs to mutate\n");
    return 2;
  }
  size_t cap = max_len;
  if (!cap) {
    cap = 4096;
    for (size_t i = 0; i < npool; i++) cap = pool[i].len > cap ? pool[i].len : cap;
  }
  uint8_t *buf = malloc(cap);
  if (!buf) die("-M", "out of memory");
  rng = mut_seed;
  prepare_crash_dir();
  printf("mutate: %zu inputs, seed %llu, %lu s, timeout %lu s, max %zu bytes, crashes to %s\n", npool,
         mut_seed, mut_seconds, hang_timeout, cap, crash_dir);
  fflush(stdout);
  double t0 = now(), next_status = t0 + 10;
  unsigned long execs = 0;
  for (;;) {
    if (max_runs && execs >= max_runs) break;
    double t = now();
    if (t - t0 >= (double)mut_seconds) break;
    if (!quiet && t >= next_status) {
      printf("mutate: %.0f s, %lu execs, %.0f exec/s\n", t - t0, execs, (double)execs / (t - t0));
      fflush(stdout);
      next_status = t + 10;
    }
    size_t len;
    if (execs < npool) { /* the inputs as they are first: a failing seed is not a mutation's doing */
      len = pool[execs].len;
      snprintf(current, sizeof current, "%s (not mutated)", pool[execs].path);
      alarm((unsigned)hang_timeout);
      run_one(pool[execs].data, len, current);
    } else {
      const struct input *in = &pool[below(npool)];
      len = min_size(in->len, cap);
      memcpy(buf, in->data, len);
      for (unsigned k = 1u << below(4); k > 0; k--) len = mutate_once(buf, len, cap);
      snprintf(current, sizeof current,
               "a mutation of %s (exec %lu: -s %llu -r %lu with the same inputs makes it again)", in->path,
               execs + 1, mut_seed, execs + 1);
      if (max_runs && execs + 1 == max_runs) {
        /* The last run of -r: saved before it runs, for a failure that no
         * handler sees (the OOM killer, a hang with signals blocked). */
        cur_data = buf, cur_len = len;
        save_current("input");
      }
      alarm((unsigned)hang_timeout);
      run_one(buf, len, current);
    }
    alarm(0);
    execs++;
  }
  double secs = now() - t0;
  printf("mutate: %lu execs in %.1f s (%.0f exec/s), seed %llu, no crash\n", execs, secs,
         secs > 0 ? (double)execs / secs : 0.0, mut_seed);
  free(buf);
  return 0;
}

static const char *argv0;

/* The synopsis; with -h (status 0), every option too. */
static void usage(int status) {
  fprintf(status ? stderr : stdout,
          "usage: %s [-q] [-n N] [-b] FILE|DIR...   run inputs through the target\n"
          "       %s -A OUTDIR FILE|DIR...     write each input's binary form to OUTDIR\n"
          "       %s -M SECONDS [-s SEED] [-o CRASHDIR] [-t TIMEOUT] [-r RUNS] [-x MAXLEN] [-q] FILE|DIR...\n"
          "                                    run random mutations of the inputs for SECONDS\n",
          argv0, argv0, argv0);
  if (status) {
    fprintf(stderr, "(%s -h lists the options)\n", argv0);
    exit(status);
  }
  printf("  -q          no line per input (with -M: no status line every 10 s)\n"
         "  -n N        run each input N times (threads and fork targets)\n"
         "  -b          at the end, the bytes the programs' fills wrote and their checks compared,\n"
         "              in this process (a forked child's are its own): 'model bytes: filled=F checked=C'\n"
         "  -s SEED     -M: the mutations' seed (default: from the clock; printed)\n"
         "  -o CRASHDIR -M: where a failing input is saved, as crash-HASH or timeout-HASH (default .)\n"
         "  -t TIMEOUT  -M: seconds one input may run before it is a hang (default 30)\n"
         "  -r RUNS     -M: stop after RUNS executions; the last one's input is saved\n"
         "              first, as input-<hash> (for a failure no signal handler sees)\n"
         "  -x MAXLEN   -M: the longest mutated input (default: the longest input, at least 4096)\n"
         "Folders are walked recursively in name order; *.ops files are the text form.\n"
         "Without -q, each input's line ends in the time of one run: | sort -k5 -g puts the slowest last.\n"
         "With -M, a failing input is saved and named, and the process dies of its signal.\n");
  exit(0);
}

/* A whole decimal number in [lo, hi], or the usage message. */
static unsigned long long number(int opt, const char *arg, unsigned long long lo, unsigned long long hi) {
  unsigned long long v;
  if (!prog_number(arg, lo, hi, &v)) {
    fprintf(stderr, "%s: -%c %s: want a whole number from %llu to %llu\n", argv0, opt, arg, lo, hi);
    usage(2);
  }
  return v;
}

int main(int argc, char **argv) {
  int c, only_m = 0;
  argv0 = argv[0];
  while ((c = getopt(argc, argv, "+qbn:A:M:s:o:t:r:x:h")) != -1) {
    switch (c) {
      case 'q': quiet = 1; break;
      case 'b': bytes_line = 1; break;
      case 'n': repeat = (unsigned long)number(c, optarg, 1, ULONG_MAX); break;
      case 'A': assemble_dir = optarg; break;
      case 'M': mutate = 1, mut_seconds = (unsigned long)number(c, optarg, 1, 100L * 24 * 3600); break;
      case 's': mut_seed = number(c, optarg, 0, ULLONG_MAX), have_seed = 1, only_m = c; break;
      case 'o': crash_dir = optarg, only_m = c; break;
      case 't': hang_timeout = (unsigned long)number(c, optarg, 1, 24 * 3600), only_m = c; break;
      case 'r': max_runs = (unsigned long)number(c, optarg, 1, ULONG_MAX), only_m = c; break;
      case 'x': max_len = (unsigned long)number(c, optarg, 1, 64UL << 20), only_m = c; break;
      case 'h': usage(0); break;
      default: usage(2);
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "%s: no FILE or DIR given\n", argv0);
    usage(2);
  }
  if (only_m && !mutate) {
    fprintf(stderr, "%s: -%c goes with -M only\n", argv0, only_m);
    usage(2);
  }
  if (mutate && (assemble_dir || repeat != 1 || bytes_line)) {
    fprintf(stderr, "%s: -M does not go with -A, -n or -b\n", argv0);
    usage(2);
  }
  if (bytes_line) model_count_bytes();
  main_pid = getpid();
  if (mutate && !have_seed) mut_seed = (unsigned long long)time(NULL) * 1000003u ^ (unsigned long long)main_pid;
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
  if (mutate) return run_mutations();
  if (assemble_dir) printf("assembled %lu inputs into %s\n", inputs, assemble_dir);
  else if (repeat > 1) printf("replayed %lu inputs (%lu times each)\n", inputs, repeat);
  else printf("replayed %lu inputs\n", inputs);
  if (bytes_line && !assemble_dir) {
    uint64_t filled, checked;
    model_bytes(&filled, &checked);
    printf("model bytes: filled=%llu checked=%llu\n", (unsigned long long)filled, (unsigned long long)checked);
  }
  return 0;
}
