/* The differential oracle (see oracle.h): the executor for op programs, the
 * glibc 2.36 specification of each call's outcome, and the comparison with
 * glibc's own malloc in the same process. */
#define _GNU_SOURCE
#include "oracle.h"

#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "childcov.h"
#include "options.h"
#include "vigil.h"

/* Under a sanitizer the process's malloc is the sanitizer's, not glibc's:
 * there is nothing to compare with, and the specification alone judges. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HAVE_GLIBC_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HAVE_GLIBC_MALLOC 0
#endif
#endif
#ifndef HAVE_GLIBC_MALLOC
#define HAVE_GLIBC_MALLOC 1
#endif
/* Under Valgrind the process's malloc is Valgrind's replacement (which also
 * aborts on alignments glibc refuses with EINVAL): the same. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() RUNNING_ON_VALGRIND
#endif
#endif
#ifndef UNDER_VALGRIND
#define UNDER_VALGRIND() 0
#endif

#define SENTINEL_ERRNO 7777
/* Requests up to this size must succeed; above it they may fail (ENOMEM). */
#define MUST_FIT ((size_t)64 << 20)

/* VIGIL_ORACLE_GLIBC_MAX: requests above this many bytes run on vigil's
 * side alone (the specification judges it), as a big aligned one does.
 * qemu-targets/lib.sh sets 1 GiB for the QEMU runs of the static builds:
 * QEMU 7.2 zeroes the whole of a brk that grows back over a range it had
 * before, and glibc serves big blocks from brk when an input raises
 * M_MMAP_THRESHOLD (qemu-targets/README.md, "Known QEMU bugs").  Read with
 * the other knobs (read_knobs). */
static size_t glibc_max = SIZE_MAX;

struct outcome {
  int null; /* the call returned NULL (or a non-zero int) */
  int err;  /* errno afterwards (SENTINEL_ERRNO: untouched) */
  long ret; /* int results */
};

struct run {
  const struct op *ops;
  size_t n;
  const struct oracle_config *cfg;
  int glibc; /* comparing with glibc for this program */
  struct model m;
  void *gslot[PROG_SLOTS], *gmail[PROG_MAILBOXES];
  pthread_t th[PROG_THREADS];
  int th_live[PROG_THREADS];
  pthread_cond_t mail_cond; /* broadcast under m.lock when a pass has run */
  int perturb;              /* M_PERTURB is on: both allocators write every new block */
  /* Threads, and an op that turns M_PERTURB on: it may be on, set by
   * another thread, by the time any allocation of the program reads it. */
  int perturb_any_time;
  /* The program's happens-before, decided before it runs (plan_handoffs):
   * the pass a recv waits for (NO_PASS: none, it returns at once), and
   * which passes have run (under m.lock). */
  uint16_t recv_waits_for[PROG_MAX_OPS];
  uint8_t pass_done[PROG_MAX_OPS];
  struct cost cost;
  int nlive; /* spawned threads running (the main thread's count): syscall counts are then in flux */
};

/* The syscall allowance the op a thread is running earned by touching a
 * large block (or by a request that may have tried to map one), in
 * 1/COST_UNIT syscalls (cost_large_op). */
static __thread unsigned long op_allow;

_Noreturn void oracle_fail(const char *target, size_t index, const struct op *op, const char *fmt, ...) {
  char text[160] = "(end of program)";
  if (op) prog_format(op, text, sizeof text);
  fprintf(stderr, "vigil oracle: %s: op #%zu '%s': ", target, index, text);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

#define FAIL(...) oracle_fail(r->cfg->target, i, o, __VA_ARGS__)

static const char *describe(const struct outcome *x, char *buf, size_t cap) {
  snprintf(buf, cap, "%s errno=%s%s ret=%ld", x->null ? "NULL" : "ok", x->err == SENTINEL_ERRNO ? "(kept)" : "",
           x->err == SENTINEL_ERRNO ? "" : strerrorname_np(x->err) ? strerrorname_np(x->err) : "?", x->ret);
  return buf;
}

/* The specification: what glibc 2.36 documents and does. */
static void expect(struct run *r, size_t i, const struct op *o, const struct outcome *v, int fail_errno,
                   int must_succeed) {
  char b[96];
  if (fail_errno) {
    if (!v->null || v->err != fail_errno)
      FAIL("vigil gave %s, the specification says NULL with %s", describe(v, b, sizeof b), strerrorname_np(fail_errno));
  } else if (must_succeed && v->null) {
    FAIL("vigil failed (%s) on a request that must succeed", describe(v, b, sizeof b));
  } else if (v->null && v->err != ENOMEM) {
    FAIL("vigil failed with %s, want ENOMEM", describe(v, b, sizeof b));
  } else if (!v->null && v->err != SENTINEL_ERRNO) {
    FAIL("vigil succeeded but changed errno to %s", strerrorname_np(v->err));
  }
}

static void compare(struct run *r, size_t i, const struct op *o, const struct outcome *v, const struct outcome *g,
                    int big) {
  if (!r->glibc) return;
  char b1[96], b2[96];
  if (big && v->null != g->null) return; /* may fail on either side */
  /* On success glibc may leave errno changed (an mmap that failed before a
   * fallback that worked: seen under QEMU, whose guests have less address
   * space); vigil's errno on success is checked by expect(). */
  int both_ok = !v->null && !g->null;
  if (v->null != g->null || (!both_ok && v->err != g->err) || v->ret != g->ret)
    FAIL("vigil: %s; glibc: %s", describe(v, b1, sizeof b1), describe(g, b2, sizeof b2));
}

static size_t next_pow2(size_t a) {
  size_t p = 1;
  while (p < a && p) p <<= 1;
  return p;
}

/* ---- the vigil side, under the model ---- */

/* Frees slot s (vigil) with its checks: contents, and free keeping errno. */
static void release(struct run *r, size_t i, const struct op *o, struct mblock *where) {
  struct mblock b = model_take(&r->m, where);
  if (!b.p) return;
  if (b.large) op_allow += cost_large_op(NULL, &b);
  const char *bad = r->cfg->check_contents ? model_verify(&b) : NULL;
  if (bad) FAIL("before free: %s", bad);
  errno = SENTINEL_ERRNO;
  vigil_free(b.p);
  if (errno != SENTINEL_ERRNO) FAIL("free changed errno to %s", strerrorname_np(errno));
}

static void glibc_release(void **where) {
  free(*where);
  *where = NULL;
}

/* Empties a slot on both sides (vigil's with its checks). */
static void release_both(struct run *r, size_t i, const struct op *o, struct mblock *where, void **gw) {
  release(r, i, o, where);
  glibc_release(gw);
}

static void record(struct run *r, size_t i, const struct op *o, struct mblock *where, void *p, size_t req,
                   size_t align, enum content c, const struct mblock *from) {
  struct mblock b = {0};
  b.p = p;
  b.req = req;
  b.align = align;
  b.usable = vigil_malloc_usable_size(p);
  b.content = (unsigned char)c;
  b.large = (unsigned char)cost_is_large(p);
  b.valid = c == C_ZERO ? (req < MODEL_CHECK_MAX ? req : MODEL_CHECK_MAX) : 0;
  if (from && from->content != C_UNKNOWN) { /* realloc keeps the prefix */
    b.content = from->content;
    b.fill = from->fill;
    b.valid = from->valid < req ? from->valid : req;
  }
  if (r->cfg->check_contents) {
    const char *bad = model_verify(&b);
    if (bad) FAIL("%s", bad);
  } else {
    b.content = C_UNKNOWN;
  }
  if (from) {
    char why[512], counts[512];
    if (cost_chain_step(&r->cost, &b, from, why, sizeof why)) {
      cost_describe(&r->cost, r->m.pages.peak, counts, sizeof counts);
      FAIL("%s; %s", why, counts);
    }
  } else {
    cost_chain_start(&b);
  }
  if (b.large || (from && from->large)) op_allow += cost_large_op(from, &b);
  const char *bad = model_add(&r->m, where, &b);
  if (bad) FAIL("result %p: %s", p, bad);
}

/* Runs one allocating call on both sides. */
static void *call(const struct op *o, size_t n, void *old, int glibc, struct outcome *out) {
  void *p = NULL;
  int ret = 0;
  errno = SENTINEL_ERRNO;
  switch (o->kind) {
    case OP_MALLOC: p = glibc ? malloc(n) : vigil_malloc(n); break;
    case OP_CALLOC: p = glibc ? calloc(o->nmemb, o->size) : vigil_calloc(o->nmemb, o->size); break;
    case OP_REALLOC: p = glibc ? realloc(old, n) : vigil_realloc(old, n); break;
    case OP_REALLOCARRAY:
      p = glibc ? reallocarray(old, o->nmemb, o->size) : vigil_reallocarray(old, o->nmemb, o->size);
      break;
    case OP_MEMALIGN: p = glibc ? memalign(o->align, n) : vigil_memalign(o->align, n); break;
    case OP_ALIGNED_ALLOC: p = glibc ? aligned_alloc(o->align, n) : vigil_aligned_alloc(o->align, n); break;
    case OP_POSIX_MEMALIGN: {
      void *mp = (void *)(uintptr_t)0xdead0;
      ret = glibc ? posix_memalign(&mp, o->align, n) : vigil_posix_memalign(&mp, o->align, n);
      p = ret == 0 ? mp : NULL;
      if (ret != 0 && mp != (void *)(uintptr_t)0xdead0) p = (void *)(uintptr_t)1; /* memptr touched: caught below */
      break;
    }
    case OP_VALLOC: p = glibc ? valloc(n) : vigil_valloc(n); break;
    case OP_PVALLOC: p = glibc ? pvalloc(n) : vigil_pvalloc(n); break;
  }
  out->err = errno;
  out->null = p == NULL;
  out->ret = ret;
  return p;
}

static void exec_alloc(struct run *r, unsigned t, size_t i, const struct op *o) {
  unsigned s = (o->slot % 16u) + 16u * t;
  struct mblock *where = &r->m.slot[s];
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  size_t n = o->size, align = 16, req;
  int fail = 0, must = 0, big = 0;
  enum content content = C_UNKNOWN;
  int resize = o->kind == OP_REALLOC || o->kind == OP_REALLOCARRAY;
  switch (o->kind) {
    case OP_MALLOC:
      fail = n > PTRDIFF_MAX ? ENOMEM : 0;
      break;
    case OP_CALLOC:
    case OP_REALLOCARRAY:
      if (__builtin_mul_overflow(o->nmemb, o->size, &n) || n > PTRDIFF_MAX) fail = ENOMEM;
      if (o->kind == OP_CALLOC) content = C_ZERO;
      break;
    case OP_REALLOC:
      fail = n > PTRDIFF_MAX ? ENOMEM : 0;
      break;
    case OP_MEMALIGN:
    case OP_ALIGNED_ALLOC:
      if (o->align > (size_t)-1 / 2 + 1) fail = EINVAL;
      else if (o->align > 16) align = next_pow2(o->align);
      if (!fail && n > PTRDIFF_MAX) fail = ENOMEM;
      big = align > MUST_FIT;
      break;
    case OP_POSIX_MEMALIGN:
      if (o->align == 0 || o->align % sizeof(void *) || (o->align / sizeof(void *)) & (o->align / sizeof(void *) - 1))
        fail = EINVAL;
      else align = o->align > 16 ? o->align : 16;
      big = align > MUST_FIT || n > PTRDIFF_MAX;
      break;
    case OP_VALLOC:
      align = ps;
      fail = n > PTRDIFF_MAX ? ENOMEM : 0;
      break;
    case OP_PVALLOC:
      align = ps;
      if (n > (size_t)-1 - (ps - 1)) fail = ENOMEM;
      else n = (n + ps - 1) & ~(ps - 1);
      if (!fail && n > PTRDIFF_MAX) fail = ENOMEM;
      break;
  }
  req = n;
  big = big || (!fail && n > MUST_FIT);
  must = !fail && !big;
  /* With M_PERTURB on, both allocators fill whole new blocks: a request for
   * gigabytes that the kernel would grant lazily would be touched in full.
   * With threads, whether it is on when vigil reads it is a race: a 1.5 GiB
   * malloc in one thread while the main thread turned perturb on made
   * libFuzzer's RSS jump by 1.5 GB, on no input alone (2026-12-05). */
  if ((r->perturb || r->perturb_any_time) && (big || n > MODEL_CHECK_MAX)) return;

  /* The vigil side. */
  struct mblock old = {0};
  if (resize) {
    old = model_take(&r->m, where);
    if (old.p && r->cfg->check_contents) {
      const char *bad = model_verify(&old);
      if (bad) FAIL("before realloc: %s", bad);
    }
  } else {
    release(r, i, o, where);
  }
  struct outcome v, g = {0};
  void *p = call(o, n, old.p, 0, &v);
  /* A request that failed may have tried a mapping (a realloc of a large
   * block may have tried several); realloc(p, 0) freed the old block. */
  if (p == NULL && (n > ((size_t)64 << 10) || old.large)) op_allow += cost_large_op(NULL, NULL);
  if (o->kind == OP_POSIX_MEMALIGN) {
    if (p == (void *)(uintptr_t)1) FAIL("posix_memalign wrote *memptr although it failed (%ld)", v.ret);
    v.null = v.ret != 0;
    if (v.ret && v.err != SENTINEL_ERRNO && v.err != v.ret) FAIL("posix_memalign set errno %d", v.err);
    if (fail == EINVAL && v.ret != EINVAL) FAIL("posix_memalign returned %ld, want EINVAL", v.ret);
    if (!fail && must && v.ret != 0) FAIL("posix_memalign returned %ld on a request that must succeed", v.ret);
    if (!fail && v.ret && v.ret != ENOMEM) FAIL("posix_memalign returned %ld", v.ret);
    v.err = SENTINEL_ERRNO; /* glibc may leave ENOMEM in errno too: compared through ret */
  } else if (resize && old.p && n == 0 && !fail) {
    /* realloc(p, 0): frees p, returns NULL, errno untouched (glibc). */
    if (p != NULL || v.err != SENTINEL_ERRNO)
      FAIL("realloc(p, 0) gave %p errno %d; glibc frees and returns NULL", p, v.err);
  } else {
    expect(r, i, o, &v, fail, must);
  }
  if (p) {
    record(r, i, o, where, p, req, align, content, resize && old.p ? &old : NULL);
  } else if (resize && old.p && (n != 0 || fail)) {
    /* A failed realloc leaves the block as it was. */
    const char *bad = r->cfg->check_contents ? model_verify(&old) : NULL;
    if (bad) FAIL("failed realloc damaged the block: %s", bad);
    if (vigil_malloc_usable_size(old.p) != old.usable) FAIL("failed realloc changed the block's usable size");
    const char *bad2 = model_add(&r->m, where, &old);
    if (bad2) FAIL("%s", bad2);
  }

  /* The glibc side: same call, its own slots.  Not for a big aligned
   * request (over 64 MiB, or aligned above that), which either side may
   * refuse and whose failure the specification judges: glibc 2.36-8 (the
   * cross sysroots' static libc) crashes in _int_memalign on sizes near
   * PTRDIFF_MAX (corpus/regressions/edge/NOTES).
   * Nor for one over VIGIL_ORACLE_GLIBC_MAX (under QEMU).
   * When one side got a big block and the other did not, the slot is
   * emptied on both sides, so that later ops on it compare like with like
   * (on 32-bit targets a request of a few hundred MiB can go either way). */
  int aligned = o->kind == OP_MEMALIGN || o->kind == OP_ALIGNED_ALLOC || o->kind == OP_POSIX_MEMALIGN ||
                o->kind == OP_VALLOC || o->kind == OP_PVALLOC;
  if (r->glibc && ((aligned && big) || n > glibc_max)) {
    release_both(r, i, o, where, &r->gslot[s]);
  } else if (r->glibc) {
    void **gw = &r->gslot[s];
    if (!resize) glibc_release(gw);
    void *gp = call(o, n, *gw, 1, &g);
    if (o->kind == OP_POSIX_MEMALIGN) {
      g.null = g.ret != 0;
      g.err = SENTINEL_ERRNO;
      if (gp == (void *)(uintptr_t)1) gp = NULL;
    }
    if (gp || !resize || (n == 0 && !fail)) *gw = gp;
    /* glibc ran out where vigil did not: on a 32-bit guest, whose address
     * space the process's earlier inputs have filled, glibc refused 5 MiB
     * (corpus/regressions/options/NOTES).  Its failure is allowed, and
     * expect() has judged vigil's side; the slot is emptied as for big. */
    int glibc_out = !fail && !v.null && g.null && (g.err == ENOMEM || g.ret == ENOMEM);
    compare(r, i, o, &v, &g, big || glibc_out);
    if ((big || glibc_out) && v.null != g.null) release_both(r, i, o, where, gw);
  }
}

static void reset_glibc(void);

/* ---- threads and mailboxes ---- */
struct thread_arg {
  struct run *r;
  unsigned t;
  size_t from, to;
};
static void exec_range(struct run *r, unsigned t, size_t from, size_t to, int in_child);

static void *thread_main(void *arg) {
  struct thread_arg *a = arg;
  exec_range(a->r, a->t, a->from, a->to, 0);
  free(a);
  return NULL;
}

/* A program's threads run a few dozen ops each, on 256 KiB stacks rather
 * than the 8 MiB default.  Under ASan a thread's stack shadow (an eighth of
 * the stack) is mapped afresh at its start and given back at its exit once
 * it passes 64 KiB, so every thread paid those syscalls and refaulted the
 * shadow: with 256 KiB stacks the threads target made half the madvise
 * calls, and `-runs=0` over a 669-input working corpus took 3 to 9% less
 * time in three A/B runs (2026-12-05; the replay driver, no sanitizer, did
 * not move). */
#define THREAD_STACK ((size_t)256 << 10)

static int start_thread(struct run *r, unsigned t, size_t from, size_t to) {
  struct thread_arg *a = malloc(sizeof *a);
  *a = (struct thread_arg){r, t, from, to};
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, THREAD_STACK);
  int err = pthread_create(&r->th[t], &at, thread_main, a);
  pthread_attr_destroy(&at);
  if (err) free(a);
  return err;
}

static void join(struct run *r, unsigned t) {
  if (r->th_live[t]) {
    pthread_join(r->th[t], NULL);
    r->th_live[t] = 0;
    r->nlive--;
  }
}

/* Which pass each recv waits for, decided from the program alone: the
 * last pass on the same mailbox before it in program order that runs in
 * this process (not in a fork child's range).  So every wait is for an
 * earlier op, and waits cannot form a cycle: a thread blocks only on a
 * pass with a lower index than its own op, in a thread that main spawned
 * before it (or main itself, whose ops before a spawn have run), which
 * blocks in turn only on a lower index.  A recv with no such pass returns
 * at once.  Nothing is timed: the same program makes the same handoffs on
 * every run, and only the real races between threads remain. */
#define NO_PASS UINT16_MAX
static_assert(PROG_MAX_OPS <= NO_PASS, "op indices fit recv_waits_for");

static void note_handoff(struct run *r, size_t k, size_t *last_pass) {
  const struct op *o = &r->ops[k];
  r->recv_waits_for[k] = NO_PASS;
  if (o->kind == OP_PASS) last_pass[o->mailbox] = k;
  else if (o->kind == OP_RECV && r->cfg->allow_threads) r->recv_waits_for[k] = (uint16_t)last_pass[o->mailbox];
}

/* Walks the program as exec_range runs it: main's ops, a spawn's stream (in
 * which a spawn or fork is ignored and its ops run inline), and a fork's
 * sub-program, which runs in the child only. */
static void plan_handoffs(struct run *r) {
  const struct oracle_config *cfg = r->cfg;
  size_t last_pass[PROG_MAILBOXES];
  for (unsigned b = 0; b < PROG_MAILBOXES; b++) last_pass[b] = NO_PASS;
  for (size_t i = 0; i < r->n; i++) {
    const struct op *o = &r->ops[i];
    size_t end = i + 1 + o->count < r->n ? i + 1 + o->count : r->n;
    int fork = o->kind == OP_FORK && cfg->allow_fork, spawn = o->kind == OP_SPAWN && cfg->allow_threads;
    note_handoff(r, i, last_pass);
    if (!fork && !spawn) continue;
    for (size_t k = i + 1; k < end; k++) {
      if (spawn) note_handoff(r, k, last_pass);
      else r->recv_waits_for[k] = NO_PASS;
    }
    i = end - 1;
  }
}

static void exec_pass(struct run *r, unsigned t, size_t i, const struct op *o) {
  unsigned s = (o->slot % 16u) + 16u * t;
  pthread_mutex_lock(&r->m.lock);
  struct mblock *from = &r->m.slot[s], *to = &r->m.mailbox[o->mailbox];
  if (from->p && !to->p) {
    model_move_locked(&r->m, to, from);
    if (r->glibc) {
      r->gmail[o->mailbox] = r->gslot[s];
      r->gslot[s] = NULL;
    }
  }
  r->pass_done[i] = 1;
  pthread_cond_broadcast(&r->mail_cond);
  pthread_mutex_unlock(&r->m.lock);
}

static void exec_recv(struct run *r, unsigned t, size_t i, const struct op *o, int may_wait) {
  unsigned s = (o->slot % 16u) + 16u * t;
  release(r, i, o, &r->m.slot[s]);
  if (r->glibc) glibc_release(&r->gslot[s]);
  pthread_mutex_lock(&r->m.lock);
  struct mblock *box = &r->m.mailbox[o->mailbox];
  size_t pass = r->recv_waits_for[i];
  if (may_wait && pass != NO_PASS)
    while (!r->pass_done[pass]) pthread_cond_wait(&r->mail_cond, &r->m.lock);
  if (box->p) {
    model_move_locked(&r->m, &r->m.slot[s], box);
    if (r->glibc) {
      r->gslot[s] = r->gmail[o->mailbox];
      r->gmail[o->mailbox] = NULL;
    }
  }
  pthread_mutex_unlock(&r->m.lock);
}

/* ---- fork ---- */
/* fork() itself can deadlock (a fork handler taking locks in the wrong
 * order), and a child can hang: a watchdog thread, asleep until a deadline
 * 10 s away, turns either into a failure.  While the fork and the child
 * are healthy it costs nothing: it is armed before fork() and disarmed
 * when the child has ended, and it wakes only when a deadline passes (or
 * when it is armed from idle).  alarm() is not used: libFuzzer owns SIGALRM.
 * For tests/fork_hang.sh, two environment variables: VIGIL_ORACLE_FORK_DEADLINE_MS
 * (1 to 600000) shortens the deadline, and VIGIL_ORACLE_HANG_AT=K makes a
 * fork child that reaches op #K sleep for ever, so that the detection can
 * be seen to work.  A bad value is reported, and the default stays. */
static uint64_t fork_deadline_ns = 10000000000u;
static size_t hang_at = SIZE_MAX; /* no op */

/* The decimal in `name`, if it is set to one in [lo, hi]; else `dflt`, with a
 * message when it is set to anything else. */
static unsigned long long env_number(const char *name, unsigned long long lo, unsigned long long hi,
                                     unsigned long long dflt) {
  const char *v = getenv(name);
  unsigned long long n;
  if (v == NULL) return dflt;
  if (!prog_number(v, lo, hi, &n)) {
    fprintf(stderr, "vigil oracle: %s='%s' is not a number from %llu to %llu; ignored\n", name, v, lo, hi);
    return dflt;
  }
  return n;
}

/* The oracle's environment knobs, read once, before the first program. */
static void read_knobs(void) {
  glibc_max = (size_t)env_number("VIGIL_ORACLE_GLIBC_MAX", 1, SIZE_MAX, SIZE_MAX);
  fork_deadline_ns = env_number("VIGIL_ORACLE_FORK_DEADLINE_MS", 1, 600000, 10000) * 1000000u;
  hang_at = (size_t)env_number("VIGIL_ORACLE_HANG_AT", 0, PROG_MAX_OPS - 1, SIZE_MAX);
}
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond; /* on CLOCK_MONOTONIC */
static uint64_t wd_deadline;   /* 0: disarmed */
static pid_t wd_child;         /* 0: the parent is in fork(); else the child to kill */
static int wd_idle, wd_killed;

/* Where a fork child is, for the message when it hangs: in a page shared
 * with the parent, 0 until the child's first instruction after fork(), then
 * 1 + the index of the op it runs, then SIZE_MAX once its ops are done.  A
 * child stuck at 0 never returned from fork(): libc, the fork handlers, or
 * the emulator (qemu-targets/README.md, "Known QEMU bugs"). */
static _Atomic size_t *fork_at;
#define FORK_AT_DONE ((size_t)-1)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *fork_watchdog(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wd_lock);
  for (;;) {
    uint64_t now = now_ns();
    if (wd_deadline == 0) {
      wd_idle = 1;
      pthread_cond_wait(&wd_cond, &wd_lock);
      wd_idle = 0;
    } else if (now < wd_deadline) {
      struct timespec until = {(time_t)(wd_deadline / 1000000000u), (long)(wd_deadline % 1000000000u)};
      pthread_cond_timedwait(&wd_cond, &wd_lock, &until);
    } else if (wd_child == 0) {
      char msg[128];
      int n = snprintf(msg, sizeof msg, "vigil oracle: fork() did not return within %.1f s (deadlock in a fork handler?)\n",
                       (double)fork_deadline_ns / 1e9);
      (void)!write(2, msg, (size_t)n);
      abort();
    } else {
      /* The parent's waitpid reports the kill.  A child that ended just
       * before its deadline is a zombie until the parent (which disarms
       * first) reaps it: kill does nothing to it, and its status says
       * that it exited. */
      wd_killed = kill(wd_child, SIGKILL) == 0;
      wd_deadline = 0;
    }
  }
  return NULL;
}

static void start_watchdog(void) {
  void *page = mmap(NULL, sizeof *fork_at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page != MAP_FAILED) fork_at = page;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&wd_cond, &ca);
  pthread_condattr_destroy(&ca);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_create(&t, &a, fork_watchdog, NULL);
  pthread_attr_destroy(&a);
}

/* Arms the watchdog for `child` (0: fork() itself), or disarms it (deadline
 * 0); returns whether it killed the child it was armed for. */
static int watchdog_set(pid_t child, uint64_t deadline) {
  pthread_mutex_lock(&wd_lock);
  int killed = wd_killed;
  wd_killed = 0;
  wd_child = child;
  wd_deadline = deadline;
  if (deadline && wd_idle) pthread_cond_signal(&wd_cond);
  pthread_mutex_unlock(&wd_lock);
  return killed;
}

static void exec_fork(struct run *r, size_t i, const struct op *o, size_t from, size_t to) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, start_watchdog);
  fflush(NULL);
  watchdog_set(0, now_ns() + fork_deadline_ns);
  /* Fork holding the model's lock, so that the child does not inherit it
   * held by a spawned thread that does not exist there. */
  if (fork_at) atomic_store(fork_at, 0);
  childcov_prepare();
  pthread_mutex_lock(&r->m.lock);
  pid_t pid = fork();
  pthread_mutex_unlock(&r->m.lock);
  if (pid < 0) {
    watchdog_set(0, 0);
    FAIL("fork failed: %s", strerror(errno));
  }
  if (pid == 0) {
    childcov_child(); /* its coverage reaches libFuzzer (childcov.h) */
    if (fork_at) atomic_store(fork_at, from);
    signal(SIGABRT, SIG_DFL); /* the fuzzer's handlers are the parent's business */
    signal(SIGALRM, SIG_DFL);
    alarm(20);
    r->glibc = 0;
    /* One thread, whatever ran in the parent: the syscall bound applies
     * here, from the child's first op. */
    const char *forbid = cost_tunables_forbid();
    cost_begin(&r->cost, !forbid, forbid);
    r->m.pages.peak = r->m.pages.now;
    exec_range(r, 0, from, to, 1);
    if (fork_at) atomic_store(fork_at, FORK_AT_DONE);
    cost_report(&r->cost, "fork child", to - from, r->m.pages.peak);
    _exit(0); /* never exit(): the fuzzer's hooks must not run in the child */
  }
  watchdog_set(pid, now_ns() + fork_deadline_ns);
  /* The child's end, without reaping it (WNOWAIT): the watchdog is disarmed
   * while the pid is still this child's, so it can never kill a process
   * that took the pid over after the reap. */
  siginfo_t si;
  while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  int killed = watchdog_set(0, 0);
  int st = 0;
  pid_t w = childcov_wait(pid, &st); /* its coverage reaches libFuzzer too */
  if (w < 0) FAIL("waitpid: %s", strerror(errno));
  if (killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
    size_t at = fork_at ? atomic_load(fork_at) : FORK_AT_DONE - 1;
    double secs = (double)fork_deadline_ns / 1e9;
    if (at == 0) FAIL("the fork child hung before its first op, in fork()'s return (killed after %.1f s)", secs);
    if (at == FORK_AT_DONE) FAIL("the fork child hung after its last op, on its way out (killed after %.1f s)", secs);
    if (at == FORK_AT_DONE - 1) FAIL("the fork child hung (killed after %.1f s)", secs);
    oracle_fail(r->cfg->target, at - 1, &r->ops[at - 1], "the fork child (of op #%zu) hung in this op (killed after %.1f s)",
                i, secs);
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    FAIL("the fork child %s %d", WIFSIGNALED(st) ? "died of signal" : "exited with",
         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* M_PERTURB makes glibc's free write over every heap block, and the blocks
 * the oracle skips while perturb is on (exec_alloc) may already be live: a
 * 20 GiB block that glibc took from its heap (the program had set a huge
 * M_MMAP_THRESHOLD) cost a minute of page faults at the final free
 * (corpus/regressions/options/NOTES).  Before perturb goes on, such blocks
 * are freed on both sides, as after a big request only one side got. */
static void drop_huge_glibc_blocks(struct run *r, size_t i, const struct op *o) {
  for (unsigned s = 0; s < PROG_SLOTS; s++)
    if (r->gslot[s] && malloc_usable_size(r->gslot[s]) > MODEL_CHECK_MAX)
      release_both(r, i, o, &r->m.slot[s], &r->gslot[s]);
  for (unsigned b = 0; b < PROG_MAILBOXES; b++)
    if (r->gmail[b] && malloc_usable_size(r->gmail[b]) > MODEL_CHECK_MAX)
      release_both(r, i, o, &r->m.mailbox[b], &r->gmail[b]);
}

/* The cost check after every op, where the counts are the program's own:
 * in the main thread while no spawned thread runs (threads target: their
 * ops are checked at the next such op, or at the end), and in a fork child. */
static void after_op(struct run *r, unsigned t, size_t i, const struct op *o, int in_child) {
  if (op_allow) {
    atomic_fetch_add_explicit(&r->cost.large_units, op_allow, memory_order_relaxed);
    op_allow = 0;
  }
  char why[640];
  if (t == 0 && (in_child || r->nlive == 0) && atomic_load_explicit(&r->cost.on, memory_order_relaxed) &&
      cost_check(&r->cost, r->m.pages.peak, why, sizeof why))
    FAIL("%s", why);
}

static void exec_range(struct run *r, unsigned t, size_t from, size_t to, int in_child) {
  const struct oracle_config *cfg = r->cfg;
  for (size_t i = from; i < to; i++) {
    const struct op *o = &r->ops[i];
    if (in_child && fork_at) atomic_store_explicit(fork_at, i + 1, memory_order_relaxed);
    if (in_child && i == hang_at)
      for (;;) pause(); /* VIGIL_ORACLE_HANG_AT: a hang on purpose (tests/fork_hang.sh) */
    if (t == 0 && !in_child && cfg->before_op) {
      /* The hook's own calls (corrupt's frees) are not the program's. */
      unsigned long before = cost_total_now();
      cfg->before_op(i, &r->m, cfg->ctx);
      atomic_fetch_add(&r->cost.excluded, cost_total_now() - before);
    }
    unsigned s = (o->slot % 16u) + 16u * t;
    switch (o->kind) {
      case OP_MALLOC: case OP_CALLOC: case OP_REALLOC: case OP_REALLOCARRAY: case OP_MEMALIGN:
      case OP_ALIGNED_ALLOC: case OP_POSIX_MEMALIGN: case OP_VALLOC: case OP_PVALLOC:
        exec_alloc(r, t, i, o);
        break;
      case OP_FREE:
        release(r, i, o, &r->m.slot[s]);
        if (r->glibc) glibc_release(&r->gslot[s]);
        break;
      case OP_USABLE: {
        struct mblock *b = &r->m.slot[s];
        size_t u = vigil_malloc_usable_size(b->p);
        if (!b->p && u != 0) FAIL("malloc_usable_size(NULL) = %zu", u);
        if (b->p && u != b->usable) FAIL("usable size changed from %zu to %zu", b->usable, u);
        /* Only when both slots are empty: after a big request that one side
         * refused, the slots may differ. */
        if (r->glibc && !b->p && !r->gslot[s] && malloc_usable_size(NULL) != u) FAIL("usable(NULL) differs from glibc");
        break;
      }
      case OP_FILL:
        if (r->m.slot[s].p) model_fill(&r->m.slot[s], o->byte);
        break;
      case OP_CHECK:
        if (cfg->check_contents) {
          const char *bad = model_verify(&r->m.slot[s]);
          if (bad) FAIL("%s", bad);
        }
        break;
      case OP_TRIM: {
        errno = SENTINEL_ERRNO;
        atomic_fetch_add(&r->cost.events, 1);
        int v = vigil_malloc_trim(o->size);
        if ((v != 0 && v != 1) || errno != SENTINEL_ERRNO) FAIL("malloc_trim returned %d, errno %d", v, errno);
        break;
      }
      case OP_TUNE: {
        if (o->param == M_PERTURB && o->value != 0 && r->glibc) drop_huge_glibc_blocks(r, i, o);
        errno = SENTINEL_ERRNO;
        struct outcome v = {0, 0, vigil_mallopt(o->param, o->value)}, g = v;
        if (o->param == M_PERTURB) r->perturb = o->value != 0; /* glibc: any non-zero value */
        v.err = errno;
        cost_tunables_changed(&r->cost);
        if (r->glibc) {
          errno = SENTINEL_ERRNO;
          g.ret = mallopt(o->param, o->value);
          g.err = errno;
          /* Knobs vigil has no counterpart for would make glibc's later
           * outcomes incomparable (a huge M_TOP_PAD makes every sbrk fail):
           * their return values are compared, their effect undone. */
          if (o->param != M_MMAP_THRESHOLD && o->param != M_TRIM_THRESHOLD && o->param != M_PERTURB &&
              o->param != M_ARENA_MAX)
            reset_glibc();
          compare(r, i, o, &v, &g, 0);
        }
        break;
      }
      case OP_SPAWN:
        if (t == 0 && !in_child && cfg->allow_threads) {
          size_t end = i + 1 + o->count < to ? i + 1 + o->count : to;
          join(r, o->thread);
          if (start_thread(r, o->thread, i + 1, end) != 0) FAIL("pthread_create failed");
          r->th_live[o->thread] = 1;
          r->nlive++;
          atomic_fetch_add(&r->cost.events, 1);
          atomic_fetch_add(&r->cost.spawns, 1);
          i = end - 1;
        }
        break;
      case OP_JOIN:
        if (t == 0 && !in_child) join(r, o->thread);
        break;
      case OP_PASS:
        exec_pass(r, t, i, o);
        break;
      case OP_RECV:
        exec_recv(r, t, i, o, cfg->allow_threads && !in_child);
        break;
      case OP_FORK:
        if (t == 0 && !in_child && cfg->allow_fork) {
          size_t end = i + 1 + o->count < to ? i + 1 + o->count : to;
          atomic_fetch_add(&r->cost.events, 1);
          exec_fork(r, i, o, i + 1, end);
          i = end - 1;
        }
        break;
    }
    after_op(r, t, i, o, in_child);
  }
}

static size_t in_use(void) {
  struct mallinfo2 mi = vigil_mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

static void reset_glibc(void) {
  if (HAVE_GLIBC_MALLOC) {
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
    mallopt(M_TOP_PAD, 128 << 10);
    mallopt(M_MMAP_MAX, 65536);
    mallopt(M_MXFAST, 64 * (int)sizeof(size_t) / 4);
    mallopt(M_PERTURB, 0);
  }
}

void oracle_reset_tunables(void) {
  for (unsigned k = 0; k < OPT_COUNT; k++) vg_option_set((enum vg_opt)k, vg_opt_table[k].def);
  atomic_store_explicit(&vg_opt_thresholds_fixed, 0, memory_order_relaxed);
  reset_glibc();
}

void oracle_run_input(const uint8_t *data, size_t size, const struct oracle_config *cfg) {
  static struct op ops[PROG_MAX_OPS];
  oracle_run(ops, prog_decode(data, size, ops, PROG_MAX_OPS, NULL), cfg);
}

void oracle_run(const struct op *ops, size_t n, const struct oracle_config *cfg) {
  static pthread_once_t knobs = PTHREAD_ONCE_INIT;
  pthread_once(&knobs, read_knobs);
  struct run *r = calloc(1, sizeof *r);
  r->ops = ops;
  r->n = n;
  r->cfg = cfg;
  r->glibc = cfg->compare_glibc && HAVE_GLIBC_MALLOC && !UNDER_VALGRIND() && !cfg->allow_threads;
  plan_handoffs(r);
  for (size_t k = 0; k < n && cfg->allow_threads; k++)
    if (ops[k].kind == OP_TUNE && ops[k].param == M_PERTURB && ops[k].value != 0) r->perturb_any_time = 1;
  model_init(&r->m);
  pthread_cond_init(&r->mail_cond, NULL);
  vigil_malloc_trim(0);
  size_t base = in_use();
  const char *forbid = cfg->background_allocs ? "other threads allocate (fork children are checked)"
                                              : cost_tunables_forbid();
  cost_begin(&r->cost, !forbid, forbid);
  exec_range(r, 0, 0, n, 0);
  for (unsigned t = 1; t < PROG_THREADS; t++) join(r, t);
  /* Free everything, with the checks. */
  const struct op *last = n ? &ops[n - 1] : NULL;
  size_t i = n;
  const struct op *o = last;
  for (unsigned s = 0; s < PROG_SLOTS; s++) {
    release(r, i, o, &r->m.slot[s]);
    glibc_release(&r->gslot[s]);
  }
  for (unsigned b = 0; b < PROG_MAILBOXES; b++) {
    release(r, i, o, &r->m.mailbox[b]);
    glibc_release(&r->gmail[b]);
  }
  /* The final frees are the program's too. */
  if (op_allow) atomic_fetch_add(&r->cost.large_units, op_allow), op_allow = 0;
  char why[640];
  if (atomic_load(&r->cost.on) && cost_check(&r->cost, r->m.pages.peak, why, sizeof why)) FAIL("%s", why);
  cost_report(&r->cost, cfg->target, n, r->m.pages.peak);
  vigil_malloc_trim(0); /* drains this thread's remote frees */
  if (cfg->check_leaks) {
    size_t now = in_use();
    if (now != base) FAIL("in-use bytes %zu after freeing everything, %zu before the program: blocks were lost", now, base);
  }
  oracle_reset_tunables();
  pthread_cond_destroy(&r->mail_cond);
  pthread_mutex_destroy(&r->m.lock);
  free(r);
}
