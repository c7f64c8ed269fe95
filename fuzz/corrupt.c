/* Target corrupt: one corruption, applied in a forked child in the middle
 * of a program: a use-after-free write, an overflow of k bytes, an interior,
 * foreign or double free, a spray over the bytes before a block (where an
 * in-band allocator keeps its headers), a double free across threads
 * (another thread frees the block, then the program frees it again), or a
 * double free after reuse (free, a malloc of the same size, the same free
 * again).  The child runs at a hardening level (src/harden.c) the input
 * picks.  It passes if vigil aborts with one of its messages, if the write
 * hits a guard page, or if vigil stays consistent with the model to the
 * end (no overlapping, duplicate or foreign pointer), unless the level
 * promises to catch the corruption: then only an abort or a guard will do.
 * Anything else, a hang included, is a failure.  What each level promises:
 *   >= 0  a double free after reuse (the block just freed is not the next
 *         one handed out); a write to the secret (read-only)
 *   >= 1  an overflow past a small block (its canary, checked at the
 *         block's next free, realloc or at the program's end); a
 *         use-after-free write over a small block's first word (its tag,
 *         checked when the quarantine lets the block go, or at the end)
 *   >= 2  a use-after-free write to a large block (it faults); an overflow
 *         that runs off the end of a run of small pages, when that run has
 *         its guard slab (the runs claimed at the level); a write to the
 *         segment registry (read-only between changes)
 *   >= 3  a use-after-free write anywhere in a small block or a span past
 *         its first word (the fill, checked as for the tag)
 * The sanitizer builds run at level 0 (vg_harden_set says so).
 *
 * Input: byte 0 picks the corruption (its value modulo KINDS) and the level
 * (its value divided by KINDS, modulo 4), byte 1 the op index at which it happens, byte 2 its
 * size/offset (an overflow of k >= 128 runs to the end of the block's run;
 * a foreign free with k >= 128 forges the secret, k >= 192 the registry,
 * first; before a double free across threads with k odd, the program
 * fills its thread cache for the size, so its second free goes to the
 * page), byte 3 the slot; the
 * rest is a program. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "childcov.h"
#include "heap.h"
#include "oracle.h"
#include "vigil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
  UAF_WRITE,
  OVERFLOW,
  INTERIOR_FREE,
  FOREIGN_FREE,
  DOUBLE_FREE,
  HEADER_SPRAY,
  REMOTE_DOUBLE_FREE,
  DF_AFTER_REUSE,
  KINDS
};
static const char *const kind_names[KINDS] = {"use-after-free write", "overflow",     "interior free",
                                              "foreign free",         "double free",  "header spray",
                                              "double free across threads", "double free after reuse"};

struct plan {
  unsigned kind, at, k, slot, level;
  int done;
  int must_catch; /* the level promises to stop what was done */
};

/* The range the harness is writing: a fault inside it is a guard page doing
 * its job; a fault anywhere else is a crash. */
static volatile uintptr_t write_lo, write_hi, page_mask;

static void on_fault(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  /* Some kernels (s390x) report only the faulting page: compare pages. */
  uintptr_t a = (uintptr_t)si->si_addr;
  if (a >= (write_lo & page_mask) && a < write_hi) _exit(42);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((no_sanitize("address"), noinline)) static void scribble(unsigned char *p, size_t n, unsigned char v) {
  write_lo = (uintptr_t)p;
  write_hi = (uintptr_t)p + n;
  for (size_t i = 0; i < n; i++) ((volatile unsigned char *)p)[i] = (unsigned char)(v + i);
  write_lo = write_hi = 0;
}

_Noreturn static void undetected(const char *what) {
  fprintf(stderr, "corrupt: vigil returned from a %s\n", what);
  _exit(3);
}

/* Fill the calling thread's cache for blocks of n bytes: the last block
 * freed is held, and tcache_count more are cached, where they stay. */
static void fill_cache(size_t n) {
  void *v[255 + 2]; /* 255: tcache_count's maximum (src/options.def) */
  size_t count = vg_option(OPT_tcache_count) + 2;
  for (size_t i = 0; i < count; i++) v[i] = vigil_malloc(n);
  for (size_t i = 0; i < count; i++) vigil_free(v[i]);
}

static void *free_it(void *p) {
  vigil_free(p);
  return NULL;
}

static void corrupt(size_t index, struct model *m, void *ctx) {
  struct plan *pl = ctx;
  if (pl->done || index < pl->at) return;
  struct mblock *b = &m->slot[pl->slot % 16];
  if (!b->p && pl->kind != FOREIGN_FREE) return; /* wait for a live block */
  pl->done = 1;
  unsigned char *p = b->p;
  static char not_ours[64] __attribute__((aligned(16)));
  switch (pl->kind) {
    case UAF_WRITE: {
      size_t off = pl->k % 32, len = 1 + pl->k % 24;
      bool canary = vg_harden_canary_at(p), fits = off + len <= b->usable;
      b->p = NULL;
      vigil_free(p);
      /* The tag is secret: a write may leave it as it was (1 in 256 for a
       * byte), and then there is nothing to catch. */
      uintptr_t tag = 0, now = 0;
      if (canary) memcpy(&tag, p, sizeof tag);
      scribble(p + off, len, 0x41);
      if (pl->level >= 2 && b->large) undetected("use-after-free write to a large block");
      if (canary) memcpy(&now, p, sizeof now);
      pl->must_catch = (pl->level >= 1 && canary && now != tag) ||
                       (pl->level >= 3 && !b->large && fits && off + len > sizeof(void *));
      break;
    }
    case OVERFLOW: {
      /* k < 128: 1 + k % 64 bytes past the block.  k >= 128: from the
       * block's end to that many bytes past the end of its run (small pages
       * or a span), where a guard slab stands after a run of small pages
       * at harden >= 2. */
      struct page *pg = page_of(p);
      uint8_t *end = p + b->usable;
      if (pl->k >= 128 && pg != NULL) end = pg->start + (size_t)pg->npages * VG_PAGE;
      bool guarded = pl->k >= 128 && pg != NULL && pg->guard;
      pl->must_catch = pl->k >= 128 ? guarded : vg_harden_canary_at(p);
      scribble(p + b->usable, (size_t)(end - (p + b->usable)) + 1 + pl->k % 64, 0x42);
      /* The guard's promise is the fault itself: the canary would see the
       * write later, at the block's free. */
      if (guarded) undetected("overflow off the end of a run with a guard slab");
      break;
    }
    /* These four must stop the program at the bad call itself. */
    case INTERIOR_FREE: /* inside this block: never another block's start */
      vigil_free(p + 1 + (size_t)pl->k * 8 % (b->usable - 1));
      undetected("interior free");
    case FOREIGN_FREE:
      /* k >= 128: the attacker first forges what would make the pointer
       * pass, with a write primitive: the secret (k < 192), sealed at
       * every level, or the registry bit of the pointer's segment, sealed
       * at harden >= 2 (src/seal.c).  Either write must fault. */
      if (pl->k >= 192 && pl->level >= 2) {
        uintptr_t idx = (uintptr_t)not_ours >> VG_SEG_SHIFT;
        scribble((unsigned char *)&vg_registry[idx / 64], sizeof vg_registry[0], 0x44);
        undetected("write to the sealed segment registry");
      }
      if (pl->k >= 128 && pl->k < 192) {
        scribble((unsigned char *)&vg_secret, sizeof vg_secret, 0x44);
        undetected("write to the sealed secret");
      }
      vigil_free(not_ours + 16 * (pl->k % 3));
      undetected("foreign free");
    case DOUBLE_FREE:
      b->p = NULL;
      vigil_free(p);
      vigil_free(p);
      undetected("double free");
    case REMOTE_DOUBLE_FREE: { /* the first free leaves the remote tag */
      b->p = NULL;
      pthread_t t;
      if (pthread_create(&t, NULL, free_it, p) == 0) pthread_join(t, NULL);
      else free_it(p); /* no thread to be had: a plain double free, still fatal */
      if (pl->k % 2) fill_cache(b->req);
      vigil_free(p);
      undetected("double free across threads");
    }
    case DF_AFTER_REUSE: {
      b->p = NULL;
      vigil_free(p);
      void *q = vigil_malloc(b->req);
      vigil_free(p);
      (void)q;
      undetected("double free after reuse");
    }
    case HEADER_SPRAY:
      scribble(p - 16 * (1 + pl->k % 16), 16 * (1 + pl->k % 16), 0x43);
      break;
  }
}

static const char *const known[] = {
    "vigil: double free at 0x",          "vigil: invalid pointer at 0x",      "vigil: corrupted free list at 0x",
    "vigil: corrupted remote free list at 0x", "vigil: corrupted metadata at 0x", "vigil: corrupted large block at 0x",
    "vigil: use of a freed block at 0x", "vigil: overflow past the end of a block at 0x",
    "vigil: write to a freed block at 0x",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct op ops[PROG_MAX_OPS];
  size_t head = prog_header_len("corrupt", data, size);
  if (head < 4) return 0;
  struct plan pl = {data[0] % KINDS, data[1], data[2], data[3], data[0] / KINDS % 4, 0, 0};
  size_t n = prog_decode(data + head, size - head, ops, PROG_MAX_OPS, NULL);
  if (n) pl.at %= n;
  int fds[2];
  if (pipe(fds) != 0) return 0;
  fflush(NULL);
  childcov_prepare();
  pid_t pid = fork();
  if (pid == 0) {
    childcov_child(); /* its coverage reaches libFuzzer (diff/childcov.h) */
    dup2(fds[1], 2);
    close(fds[0]);
    /* The fuzzer's handlers are not for the child: vigil's abort must be
     * seen as SIGABRT, and the alarm must kill. */
    signal(SIGABRT, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    struct sigaction sa = {0};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    pl.level = vg_harden_set(pl.level);
    const struct oracle_config cfg = {.target = "corrupt", .before_op = corrupt, .ctx = &pl};
    oracle_run(ops, n, &cfg);
    vg_harden_release_mine(); /* what the quarantine holds is checked now */
    if (pl.must_catch) undetected(kind_names[pl.kind]);
    _exit(0);
  }
  close(fds[1]);
  /* The child's stderr until it closes (the child's end), then its status:
   * both blocking, with one deadline for a hang that costs nothing while
   * the child is healthy (poll sleeps until output, the end, or the
   * deadline).  The child's own alarm normally fires first. */
  char out[1024] = {0}, rest[256];
  size_t len = 0;
  int st = 0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    long left = 12000 - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
    struct pollfd pf = {fds[0], POLLIN, 0};
    int ready = left > 0 ? poll(&pf, 1, (int)left) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      kill(pid, SIGKILL);
      childcov_wait(pid, &st);
      fprintf(stderr, "corrupt: %s: the child hung\n%s", kind_names[pl.kind], out);
      abort();
    }
    ssize_t r = len < sizeof out - 1 ? read(fds[0], out + len, sizeof out - 1 - len) : read(fds[0], rest, sizeof rest);
    if (r > 0 && len < sizeof out - 1) len += (size_t)r;
    else if (r == 0 || (r < 0 && errno != EINTR)) break;
  }
  close(fds[0]);
  childcov_wait(pid, &st);
  if (WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 42)) return 0; /* consistent, or a guard */
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
      if (strncmp(out, known[k], strlen(known[k])) == 0) return 0; /* vigil caught it */
  fprintf(stderr, "corrupt: %s (harden=%u, slot %u, at op %u, k=%u): the child %s %d; its stderr:\n%s\n",
          kind_names[pl.kind], pl.level, pl.slot % 16, pl.at, pl.k, WIFSIGNALED(st) ? "died of signal" : "exited with",
          WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), out);
  abort();
}
