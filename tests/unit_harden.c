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
 * In the memcheck and sanitizer builds it checks that the level stays 0. */
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
  WHITE_BOX(canary());
  WHITE_BOX(delay());
  WHITE_BOX(fill());
  WHITE_BOX(large());
  return test_done("unit_harden");
}
