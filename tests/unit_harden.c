/* The hardening levels (src/harden.c, src/harden.h), white-box: each level
 * is set with vg_harden_set where no block is live, and each defence is
 * shown both ways: the misuse is fatal with its message at the level that
 * promises it, and the same steps pass at the level below.
 *   canary      usable size is the size asked; a canary after it, in memory
 *               order a byte with its top bit set then a zero; a 1-byte
 *               overflow fatal at free, realloc and malloc_usable_size; a
 *               realloc in place moves the canary; malloc(0) traps byte 0
 *   delay       at 0 the block just freed is not the next one handed out;
 *               at 1 the thread cache hands a freed block out only behind 8
 *               others; at 2 a quarantine of at most 96 blocks and the
 *               `quarantine` tunable's bytes; a double free after reuse
 *   fill        at 3 a write anywhere past the tag is fatal when the block
 *               leaves the quarantine
 *   large       at 2 a freed large block faults, and its address is not the
 *               next one handed out
 *   guards      at 2 and 3 each run of small pages (not a span) has a
 *               PROT_NONE page after it, and a write off the run's end
 *               faults; freed guard pages are usable again by later runs;
 *               a guard the kernel refuses fails the malloc with ENOMEM
 *   sealed      the secret is read-only at every level, the segment
 *               registry at 2 and 3 (a write faults), also after segments
 *               were mapped and released; a registry page the kernel will
 *               not open fails the malloc that needed the segment
 * In the memcheck and sanitizer builds it checks that the level stays 0. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harden.h"
#include "testlib.h"

static void die_with(void (*fn)(size_t), size_t arg, const char *msg, const char *what) {
  char out[512];
  int st = tl_in_child(fn, arg, out, sizeof out);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strncmp(out, msg, strlen(msg)) == 0,
        "%s: want '%s...', got status %#x, stderr '%s'", what, msg, st, out);
}
static void live_through(void (*fn)(size_t), size_t arg, const char *what) {
  char out[512];
  int st = tl_in_child(fn, arg, out, sizeof out);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: want a clean exit, got status %#x, stderr '%s'", what, st, out);
}

/* ---- canary ---------------------------------------------------------------- */
static void nul_overflow_free(size_t level) {
  vg_harden_set((unsigned)level);
  char *p = vigil_malloc(24);
  memset(p, 'a', 25);
  vigil_free(p);
  _exit(0);
}
static void nul_overflow_realloc(size_t level) {
  vg_harden_set((unsigned)level);
  char *p = vigil_malloc(100);
  p[100] = 0;
  p = vigil_realloc(p, 5000);
  vigil_free(p);
  _exit(0);
}
static void overflow_usable(size_t level) {
  vg_harden_set((unsigned)level);
  char *p = vigil_malloc(1000);
  p[1003] ^= 0x5a; /* a secret byte of the canary, changed whatever it was */
  (void)vigil_malloc_usable_size(p);
  _exit(0);
}
static void malloc0_write(size_t level) {
  vg_harden_set((unsigned)level);
  char *p = vigil_malloc(0);
  p[0] = 1;
  vigil_free(p);
  _exit(0);
}

static void canary(void) {
  vg_harden_set(HARDEN_CANARY);
  for (size_t n = 0; n <= 2048; n += n < 64 ? 1 : 37) {
    unsigned char *p = vigil_malloc(n);
    CHECK(vigil_malloc_usable_size(p) == n, "usable size of malloc(%zu) is %zu", n, vigil_malloc_usable_size(p));
    CHECK(vg_harden_canary_at(p), "malloc(%zu) has no canary", n);
    CHECK((p[n] & 0x80) && p[n + 1] == 0, "malloc(%zu): the bytes after it are %#x %#x", n, p[n], p[n + 1]);
    memset(p, 0x5c, n);
    vigil_free(p);
  }
  /* A realloc in place moves the canary with the size. */
  unsigned char *p = vigil_malloc(40);
  unsigned char *q = vigil_realloc(p, 30);
  CHECK(q == p && vigil_malloc_usable_size(q) == 30 && (q[30] & 0x80), "shrink in place: %p -> %p, usable %zu", p,
        q, vigil_malloc_usable_size(q));
  q = vigil_realloc(q, 44);
  CHECK(q == p && vigil_malloc_usable_size(q) == 44, "grow in place within the slot: %p -> %p, usable %zu", p, q,
        vigil_malloc_usable_size(q));
  memset(q, 1, 44);
  vigil_free(q);
  /* calloc, memalign: the same. */
  unsigned char *z = vigil_calloc(10, 10);
  int zero = 1;
  for (int i = 0; i < 100; i++) zero &= z[i] == 0;
  CHECK(zero && (z[100] & 0x80), "calloc(10, 10) with its canary");
  vigil_free(z);
  void *a = NULL;
  CHECK(vigil_posix_memalign(&a, 256, 100) == 0 && (uintptr_t)a % 256 == 0 && vg_harden_canary_at(a),
        "posix_memalign(256, 100) = %p", a);
  vigil_free(a);
  /* A size the canary would push past the small classes is a span. */
  void *s = vigil_malloc(65535);
  CHECK(!vg_harden_canary_at(s) && vigil_malloc_usable_size(s) >= 65535, "malloc(65535): a span");
  vigil_free(s);
  vg_harden_set(HARDEN_BASE);

  for (size_t level = 0; level <= 1; level++) {
    void (*fns[])(size_t) = {nul_overflow_free, nul_overflow_realloc, overflow_usable, malloc0_write};
    const char *names[] = {"a NUL past 24 bytes, then free", "a NUL past 100 bytes, then realloc",
                           "a byte 3 past 1000, then malloc_usable_size", "a write to malloc(0), then free"};
    for (int i = 0; i < 4; i++) {
      if (level) die_with(fns[i], level, "vigil: overflow past the end of a block at 0x", names[i]);
      else live_through(fns[i], level, names[i]);
    }
  }
}

/* ---- delayed reuse ----------------------------------------------------------- */
/* In a child: arg is a size shifted left by 2, or'ed with a level, which is
 * set; a block of that size is allocated and freed.  Returns it. */
static char *freed_block(size_t arg) {
  vg_harden_set((unsigned)(arg & 3));
  char *p = vigil_malloc(arg >> 2);
  vigil_free(p);
  return p;
}

static void df_after_reuse(size_t arg) {
  char *p = freed_block(arg);
  char *q = vigil_malloc(arg >> 2);
  vigil_free(p); /* q if the block just freed came straight back */
  (void)q;
  _exit(0);
}

/* The same with one more block freed between: level 0 holds back only the
 * newest, so q is p there, and its second free goes unseen (exit 0 only if
 * q really is p); level 1 and up hold more. */
static void df_behind_one(size_t arg) {
  char *p = freed_block(arg);
  vigil_free(vigil_malloc(arg >> 2));
  char *q = vigil_malloc(arg >> 2);
  vigil_free(p);
  _exit(q == p ? 0 : 3);
}

static void delay(void) {
  /* Level 1: a freed block waits behind 8 others of its class. */
  vg_harden_set(HARDEN_CANARY);
  void *p = vigil_malloc(48), *got[8];
  vigil_free(p);
  int back = 0;
  for (int i = 0; i < 8; i++) back |= (got[i] = vigil_malloc(48)) == p;
  CHECK(!back, "harden=1: a freed block came back within 8 mallocs");
  for (int i = 0; i < 8; i++) vigil_free(got[i]);
  /* Level 2: at most 96 blocks, and the byte bound; a block past it is
   * released, so it can be handed out again. */
  vg_harden_set(HARDEN_QUARANTINE);
  struct heap *h = vg_tl_heap;
  enum { N = 200 };
  static void *b[N];
  for (int i = 0; i < N; i++) b[i] = vigil_malloc(512);
  for (int i = 0; i < N; i++) vigil_free(b[i]);
  CHECK(h->q_nfifo + h->q_npool <= VG_QFIFO + VG_QPOOL, "quarantine holds %u blocks", h->q_nfifo + h->q_npool);
  CHECK(h->q_nfifo == VG_QFIFO && h->q_npool == VG_QPOOL, "quarantine of 200 frees: FIFO %u, pool %u", h->q_nfifo,
        h->q_npool);
  size_t cap = vg_option(OPT_quarantine);
  vg_option_set(OPT_quarantine, 4096);
  void *big = vigil_malloc(8000);
  vigil_free(big);
  CHECK(h->q_nfifo + h->q_npool == 1 && h->q_bytes == 8192,
        "a byte bound of 4096: %u blocks, %zu bytes held after an 8000-byte free", h->q_nfifo + h->q_npool,
        h->q_bytes);
  vg_option_set(OPT_quarantine, cap);
  vg_harden_set(HARDEN_BASE);
  CHECK(h->q_nfifo + h->q_npool == 0 && h->q_bytes == 0, "setting a level empties the quarantine");

  /* The block just freed is never the next one of its size handed out, at
   * any level: tiny and small (the thread cache), above 1 KiB, a span, a
   * large block. */
  size_t sizes[] = {24, 1000, 4000, 200000, (size_t)8 << 20};
  for (int level = 0; level <= 3; level++) {
    for (int i = 0; i < 5; i++) {
      char what[96];
      size_t arg = sizes[i] << 2 | (size_t)level;
      snprintf(what, sizeof what, "double free after reuse, %zu bytes, harden=%d", sizes[i], level);
      die_with(df_after_reuse, arg, "vigil: double free at 0x", what);
      snprintf(what, sizeof what, "double free after reuse behind one more free, %zu bytes, harden=%d", sizes[i],
               level);
      if (level) die_with(df_behind_one, arg, "vigil: double free at 0x", what);
      else live_through(df_behind_one, arg, what);
    }
    /* Above what the large cache keeps (32 MiB): unmapped, the kernel
     * would give the next mmap of the size the same address, so it is kept
     * reserved until the next such free (found by the corrupt target). */
    char what[96];
    snprintf(what, sizeof what, "double free after reuse, 128 MiB, harden=%d", level);
    die_with(df_after_reuse, (size_t)128 << 20 << 2 | (size_t)level, "vigil: double free at 0x", what);
  }
}

/* ---- fill ------------------------------------------------------------------- */
static void write_after_free(size_t arg) {
  char *p = freed_block(arg);
  p[(arg >> 2) / 2] = 1; /* past the tag */
  vg_harden_release_mine();
  _exit(0);
}

static void fill(void) {
  for (int level = 2; level <= 3; level++) {
    size_t sizes[] = {64, 3000, 200000};
    for (int i = 0; i < 3; i++) {
      char what[96];
      snprintf(what, sizeof what, "a write after free in the middle of %zu bytes, harden=%d", sizes[i], level);
      size_t arg = sizes[i] << 2 | (size_t)level;
      if (level == 3) die_with(write_after_free, arg, "vigil: write to a freed block at 0x", what);
      else live_through(write_after_free, arg, what);
    }
  }
}

/* ---- large blocks ------------------------------------------------------------- */
static void large(void) {
  for (unsigned level = 1; level <= 2; level++) {
    vg_harden_set(level);
    char *p = vigil_malloc(8 << 20);
    memset(p, 1, 8 << 20);
    vigil_free(p);
    CHECK(tl_readable(p) == (level < 2), "harden=%u: a freed large block is %s", level,
          tl_readable(p) ? "readable" : "not readable");
    char *q = vigil_malloc(8 << 20);
    CHECK(q != p, "harden=%u: the freed large block's address came straight back", level);
    vigil_free(q);
  }
  vg_harden_set(HARDEN_BASE);
}

/* ---- guard slabs ------------------------------------------------------------- */
/* The end of the run that holds p. */
static uint8_t *run_end(const void *p) {
  struct page *pg = page_of(p);
  return pg->start + (size_t)pg->npages * VG_PAGE;
}
/* The first block of a run claimed for blocks of `size` bytes now (blocks
 * are taken until one is alone in its run, at its start), or NULL; the
 * blocks taken on the way are in v[0..*n).  `guarded`: the first such run
 * that has a guard (the runs claimed before the level was set have none,
 * and the class's current page may be one of them, empty; vg_harden_set
 * gave back the heap's other empty page), then two more, which must all
 * have one. */
#define FRESH_MAX 16384
static uint8_t *fresh_run_block(size_t size, bool guarded, void **v, int *n) {
  uint8_t *first = NULL;
  int more = 0;
  for (*n = 0; *n < FRESH_MAX;) {
    uint8_t *p = v[(*n)++] = vigil_malloc(size);
    struct page *pg = page_of(p);
    if (p != pg->start || load_relaxed(&pg->used) != 1) continue;
    if (!guarded) return p;
    if (first == NULL && !pg->guard) continue;
    if (first == NULL) first = p;
    else CHECK(pg->guard, "%zu bytes: a run claimed after one with a guard has none", size);
    if (++more == 3) return first;
  }
  return first;
}
/* arg: size << 2 | level.  Writes from a block to 16 bytes past its run. */
static void overflow_run(size_t arg) {
  static void *v[FRESH_MAX];
  int n;
  signal(SIGSEGV, SIG_DFL); /* not tl_readable's handler */
  vg_harden_set((unsigned)(arg & 3));
  uint8_t *p = fresh_run_block(arg >> 2, true, v, &n);
  memset(p, 0x41, (size_t)(run_end(p) - p) + 16);
  _exit(0);
}
/* Runs with guards are freed (their guards stay PROT_NONE), then spans are
 * claimed at level 0 over those pages: one of them must cover a former
 * guard, and every byte must be writable. */
static void guards_reused(size_t unused) {
  (void)unused;
  signal(SIGSEGV, SIG_DFL);
  enum { N = 600, SPANS = 24, GMAX = 64 };
  static void *v[N];
  uint8_t *guard[GMAX];
  int ng = 0;
  vg_harden_set(HARDEN_QUARANTINE);
  for (int i = 0; i < N; i++) {
    v[i] = vigil_malloc(3000);
    struct page *pg = page_of(v[i]);
    if (pg->guard && v[i] == (void *)pg->start && ng < GMAX) guard[ng++] = run_end(v[i]);
  }
  if (ng < 8) _exit(2); /* the runs above were not claimed with guards: no test */
  for (int i = 0; i < N; i++) vigil_free(v[i]);
  vg_harden_set(HARDEN_BASE); /* flushes the quarantine and the cache */
  vigil_malloc_trim(0);        /* and the empty runs go back */
  bool over = false;
  for (int i = 0; i < SPANS; i++) {
    uint8_t *sp = vigil_malloc(300000);
    memset(sp, 0x5a, 300000);
    for (int g = 0; g < ng; g++) over |= guard[g] >= sp && guard[g] < sp + 300000;
  }
  _exit(over ? 0 : 3); /* 3: no span landed on a former guard: no test */
}
/* A guard the kernel refuses: the malloc that needs the new run fails with
 * ENOMEM, and the next one, once the kernel agrees again, succeeds.  Runs
 * placed where a freed run's guard still is, over pages still committed,
 * need no mprotect, and how many such places the earlier tests left depends
 * on the decay timer; so the blocks are taken until one fails, up to 64 MiB
 * of them, which is past what any earlier test freed.  Only vg_os_protect is
 * refused (not the registry's seal, VG_FAIL_SEAL): new segments are mapped
 * and registered, and the first run in fresh memory must protect a guard. */
static void guard_refused(size_t unused) {
  (void)unused;
  vg_harden_set(HARDEN_QUARANTINE);
  long n = 0, max = (64L << 20) / 32;
  atomic_store(&vg_os_fail_for_test, VG_FAIL_PROTECT);
  while (n < max && vigil_malloc(24) != NULL) n++;
  int err = errno;
  atomic_store(&vg_os_fail_for_test, 0);
  if (n == max || err != ENOMEM) _exit(2);
  void *p = vigil_malloc(24);
  if (p == NULL || !page_of(p)->guard) _exit(3);
  _exit(0);
}
static void guards(void) {
  static const size_t sizes[] = {24, 3000, 40000, 200000};
  for (unsigned level = 0; level <= HARDEN_FILL; level++) {
    vg_harden_set(level);
    for (int i = 0; i < 4; i++) {
      static void *v[FRESH_MAX];
      int n;
      bool span = sizes[i] > VG_SMALL_MAX, want = level >= HARDEN_QUARANTINE && !span;
      uint8_t *p = fresh_run_block(sizes[i], want, v, &n);
      REQUIRE(p != NULL, "harden=%u: no new run%s for %zu bytes in %d blocks", level, want ? " with a guard" : "",
              sizes[i], FRESH_MAX);
      struct page *pg = page_of(p);
      CHECK(pg->guard == want, "harden=%u, %zu bytes: the run %s a guard", level, sizes[i],
            pg->guard ? "has" : "has no");
      if (want) {
        struct page *gp = page_of(run_end(p));
        CHECK(gp != NULL && gp->kind == PK_GUARD && !tl_readable(run_end(p)),
              "harden=%u, %zu bytes: the page after the run is not a PROT_NONE guard", level, sizes[i]);
        char out[512];
        int st = tl_in_child(overflow_run, sizes[i] << 2 | level, out, sizeof out);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
              "harden=%u, %zu bytes: an overflow off the end of the run did not fault (status %#x)", level,
              sizes[i], st);
      }
      while (n > 0) vigil_free(v[--n]);
    }
  }
  vg_harden_set(HARDEN_BASE);
  live_through(guards_reused, 0, "spans claimed over freed guard pages");
  live_through(guard_refused, 0, "a guard the kernel refused (want ENOMEM, then a guarded run)");
}

/* ---- read-only metadata (seal.c) ------------------------------------------ */
/* arg: level << 2 | fresh << 1 | what (0: the secret, 1: the registry word
 * of a live segment).  Writes the word as an attacker with a write
 * primitive would.  fresh: vigil starts here, at the level VIGIL_OPTIONS
 * gives (no vg_harden_set), in a child forked before the test's first call
 * into vigil. */
static void forge(size_t arg) {
  signal(SIGSEGV, SIG_DFL); /* not tl_readable's handler */
  if (arg & 2) {
    char opt[32];
    snprintf(opt, sizeof opt, "harden=%zu", arg >> 2);
    setenv("VIGIL_OPTIONS", opt, 1);
  } else {
    vg_harden_set((unsigned)(arg >> 2));
  }
  void *p = vigil_malloc(24);
  if (arg & 1) {
    uintptr_t idx = (uintptr_t)p >> VG_SEG_SHIFT;
    atomic_fetch_or(&vg_registry[idx / 64], (uint64_t)1 << ((idx + 1) % 64));
  } else {
    vg_secret ^= 1;
  }
  _exit(0);
}
/* Takes new segments with 900 KiB spans (spans have no guard slab) until
 * `want` more are mapped, or a malloc fails; the spans are in v[0..*n). */
#define SPANS_MAX 64
static bool new_segments(size_t want, void **v, int *n) {
  size_t before = load_relaxed(&vg_segments_mapped);
  for (*n = 0; *n < SPANS_MAX && load_relaxed(&vg_segments_mapped) < before + want;) {
    if ((v[*n] = vigil_malloc(900 << 10)) == NULL) return false;
    ++*n;
  }
  return load_relaxed(&vg_segments_mapped) >= before + want;
}
/* A new segment whose registry page the kernel would not open: the malloc
 * that needed it fails with ENOMEM, no segment is mapped, and once the
 * kernel agrees again the next malloc succeeds.  Small blocks, which have no
 * other place to go (a span the registry refuses becomes a large block),
 * taken until one fails: up to 128 MiB of them, past the room earlier tests
 * left in the segments.  Only the registry's seal is refused (VG_FAIL_SEAL),
 * not the runs' guards. */
static void registry_refused(size_t unused) {
  (void)unused;
  vg_harden_set(HARDEN_QUARANTINE);
  size_t before = load_relaxed(&vg_segments_total);
  long n = 0, max = (128L << 20) / 32;
  atomic_store(&vg_os_fail_for_test, VG_FAIL_SEAL);
  while (n < max && vigil_malloc(24) != NULL) n++;
  int err = errno;
  atomic_store(&vg_os_fail_for_test, 0);
  if (n == max || err != ENOMEM) _exit(2);
  if (load_relaxed(&vg_segments_total) != before) _exit(3);
  if (vigil_malloc(24) == NULL || load_relaxed(&vg_segments_total) != before + 1) _exit(4);
  _exit(0);
}
/* fresh: sealed by vigil's start-up (before this process's first call into
 * vigil), else by vg_harden_set's change of level. */
static void sealed_writes(bool fresh) {
  for (unsigned level = 0; level <= HARDEN_FILL; level++) {
    char out[512];
    const char *how = fresh ? "from start-up" : "set later";
    int st = tl_in_child(forge, level << 2 | fresh << 1, out, sizeof out);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
          "harden=%u (%s): a write to the secret did not fault (status %#x)", level, how, st);
    bool want = level >= HARDEN_QUARANTINE;
    st = tl_in_child(forge, level << 2 | fresh << 1 | 1, out, sizeof out);
    CHECK(want ? WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV : WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "harden=%u (%s): a write to the registry %s (status %#x)", level, how, want ? "did not fault" : "faulted",
          st);
  }
}
static void sealed(void) {
  sealed_writes(false);
  /* A length that is not whole pages is refused, not rounded up over a
   * neighbour. */
  errno = 0;
  CHECK(vg_os_seal(&vg_ro, sizeof vg_ro - 1, 1) == -1 && errno == EINVAL,
        "vg_os_seal of a part of a page: want -1 with EINVAL, errno %d", errno);
  /* Segments mapped and released while sealed: the registry still tells
   * them, and stays sealed. */
  vg_harden_set(HARDEN_QUARANTINE);
  void *v[SPANS_MAX];
  int n;
  REQUIRE(new_segments(2, v, &n), "harden=2: no new segment for 900 KiB spans");
  uintptr_t s0 = (uintptr_t)segment_of(v[n - 1]);
  CHECK(s0 != 0 && vigil_malloc_usable_size(v[n - 1]) >= 900 << 10, "a span in a new segment is not vigil's");
  while (n > 0) vigil_free(v[--n]);
  vg_harden_set(HARDEN_BASE); /* the quarantine's spans go back */
  vg_harden_set(HARDEN_QUARANTINE);
  vigil_malloc_trim(0);
  CHECK(segment_of((void *)s0) == NULL, "a released segment is still in the registry");
  char out[512];
  int st = tl_in_child(forge, HARDEN_QUARANTINE << 2 | 1, out, sizeof out);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "the registry is open after segments came and went (status %#x)",
        st);
  vg_harden_set(HARDEN_BASE);
  live_through(registry_refused, 0, "a registry page the kernel refused to open (want ENOMEM, no segment)");
}

int main(void) {
  if (VG_ANNOTATE) {
    /* The memcheck and sanitizer builds run at level 0 whatever is asked
     * (harden.c): the checkers see every byte themselves. */
    WHITE_BOX(CHECK(vg_harden_set(HARDEN_FILL) == HARDEN_BASE, "an annotated build took a level"));
    void *p = vigil_malloc(24);
    CHECK(vigil_malloc_usable_size(p) == 32, "an annotated build gave malloc(24) a canary");
    vigil_free(p);
    return test_done("unit_harden (annotated build: level 0 only)");
  }
  WHITE_BOX(sealed_writes(true)); /* first: vigil has not started in this process */
  WHITE_BOX(canary());
  WHITE_BOX(delay());
  WHITE_BOX(fill());
  WHITE_BOX(large());
  WHITE_BOX(guards());
  WHITE_BOX(sealed());
  return test_done("unit_harden");
}
