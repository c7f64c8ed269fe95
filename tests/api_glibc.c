/* api_glibc: every vigil entry point against glibc 2.36's own malloc family,
 * in one process.  Each call is made on both sides with errno preset to
 * SENTINEL, and the observable outcome classes must be identical:
 *   - NULL vs non-NULL, or the int returned;
 *   - errno afterwards (set to what, or left alone);
 *   - for a non-NULL block: aligned as glibc promises, usable size >= the
 *     request, first and last usable bytes writable, contents kept (realloc)
 *     or zeroed (calloc) where required.
 * Addresses, exact usable sizes and statistics are implementation details
 * and are never compared.  A mismatch prints one line
 *   MISMATCH <call>: glibc -> <outcome>; vigil -> <outcome>
 * and fails the test.  mallopt changes both allocators, so it runs last. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "vigil.h"

#define SENTINEL 12345
#define MiB ((size_t)1 << 20)
#define PMAX ((size_t)PTRDIFF_MAX)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the two sides ------------------------------------------------------ */

struct api {
  const char *name;
  void *(*malloc_)(size_t);
  void (*free_)(void *);
  void *(*calloc_)(size_t, size_t);
  void *(*realloc_)(void *, size_t);
  void *(*reallocarray_)(void *, size_t, size_t);
  void *(*memalign_)(size_t, size_t);
  void *(*aligned_alloc_)(size_t, size_t);
  int (*posix_memalign_)(void **, size_t, size_t);
  void *(*valloc_)(size_t);
  void *(*pvalloc_)(size_t);
  size_t (*usable_)(void *);
  int (*trim_)(size_t);
  int (*mallopt_)(int, int);
  int (*info_)(int, FILE *);
  void (*stats_)(void);
  struct mallinfo2 (*mallinfo2_)(void);
};

#define API(prefix, label)                                                                    \
  {                                                                                           \
    .name = label, .malloc_ = prefix##malloc, .free_ = prefix##free, .calloc_ = prefix##calloc, \
    .realloc_ = prefix##realloc, .reallocarray_ = prefix##reallocarray,                        \
    .memalign_ = prefix##memalign, .aligned_alloc_ = prefix##aligned_alloc,                     \
    .posix_memalign_ = prefix##posix_memalign, .valloc_ = prefix##valloc,                       \
    .pvalloc_ = prefix##pvalloc, .usable_ = prefix##malloc_usable_size,                         \
    .trim_ = prefix##malloc_trim, .mallopt_ = prefix##mallopt, .info_ = prefix##malloc_info,    \
    .stats_ = prefix##malloc_stats, .mallinfo2_ = prefix##mallinfo2,                            \
  }
static const struct api glibc_api = API(, "glibc"); /* plain names are glibc's here */
static const struct api vigil_api = API(vigil_, "vigil");
#undef API

/* Every call goes through these volatile pointers, so the compiler cannot
 * see that a call is malloc: gcc and clang would otherwise drop unused
 * malloc/free pairs, assume success, or warn about SIZE_MAX requests. */
static const struct api *volatile side[2] = {&glibc_api, &vigil_api};
enum { G, V };
#define FOR_SIDES(s) for (int s = G; s <= V; s++)

/* ---- outcomes ----------------------------------------------------------- */

enum kind { K_PTR, K_INT, K_VOID };
struct out {
  enum kind kind;
  bool null; /* K_PTR */
  long ret;  /* K_INT */
  int err;   /* errno after the call */
};

/* Each captures errno first: nothing may run between the call and these. */
static struct out ptr_out(const void *p) { return (struct out){.err = errno, .kind = K_PTR, .null = p == NULL}; }
static struct out int_out(long r) { return (struct out){.err = errno, .kind = K_INT, .ret = r}; }
static struct out void_out(void) { return (struct out){.err = errno, .kind = K_VOID}; }

static const char *errno_name(int e, char *buf, size_t cap) {
  if (e == SENTINEL) return "unchanged";
  const char *n = strerrorname_np(e);
  if (n) return n;
  snprintf(buf, cap, "%d", e);
  return buf;
}

static const char *describe(struct out o, char *buf, size_t cap) {
  char e[16];
  const char *en = errno_name(o.err, e, sizeof e);
  if (o.kind == K_PTR) snprintf(buf, cap, "%s, errno %s", o.null ? "NULL" : "non-NULL", en);
  else if (o.kind == K_INT) snprintf(buf, cap, "returned %ld, errno %s", o.ret, en);
  else snprintf(buf, cap, "errno %s", en);
  return buf;
}

static int mismatches;

/* The heart of the test: both sides must land in the same outcome class. */
static bool same(const char *call, const struct out o[2]) {
  bool ok = o[G].kind == o[V].kind && o[G].null == o[V].null && o[G].ret == o[V].ret && o[G].err == o[V].err;
  char g[64], v[64];
  CHECK(ok, "MISMATCH %s: glibc -> %s; vigil -> %s", call, describe(o[G], g, sizeof g), describe(o[V], v, sizeof v));
  if (!ok) mismatches++;
  return ok;
}

/* Sizes near the limits print symbolically, so a mismatch line reads
 * "malloc(PTRDIFF_MAX+1)" rather than 20 digits.  A small ring of buffers
 * lets one snprintf use several. */
static const char *sz(size_t n) {
  static char ring[8][32];
  static unsigned r;
  char *b = ring[r++ % 8];
  if (n == SIZE_MAX) snprintf(b, 32, "SIZE_MAX");
  else if (n > SIZE_MAX - 65536) snprintf(b, 32, "SIZE_MAX-%zu", SIZE_MAX - n);
  else if (n == PMAX) snprintf(b, 32, "PTRDIFF_MAX");
  else if (n < PMAX && n > PMAX - 65536) snprintf(b, 32, "PTRDIFF_MAX-%zu", PMAX - n);
  else if (n > PMAX && n < PMAX + 65536) snprintf(b, 32, "PTRDIFF_MAX+%zu", n - PMAX);
  else snprintf(b, 32, "%zu", n);
  return b;
}

/* ---- properties of a returned block ------------------------------------- */

/* What glibc 2.36 guarantees for a requested alignment: MALLOC_ALIGNMENT
 * (16) at least, and _mid_memalign rounds a non-power of two up to the next
 * power of two. */
static size_t promised_align(size_t a) {
  size_t e = 16;
  while (e < a) e <<= 1;
  return e;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* Aligned to `align`, at least `want` usable bytes, the first and last of
 * them writable (written and put back, so the contents are unchanged). */
static void check_block(int s, const char *call, void *p, size_t want, size_t align) {
  CHECK((uintptr_t)p % align == 0, "%s: %s = %p is not %zu-aligned", side[s]->name, call, p, align);
  size_t u = side[s]->usable_(p);
  CHECK(u >= want, "%s: %s: malloc_usable_size %zu < %zu requested", side[s]->name, call, u, want);
  if (u > 0) {
    volatile unsigned char *c = p;
    unsigned char first = c[0], last = c[u - 1];
    c[0] = (unsigned char)~first;
    c[u - 1] = (unsigned char)~last;
    c[0] = first;
    c[u - 1] = last;
  }
}

static bool all_zero(const unsigned char *p, size_t n) { return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0); }

static unsigned char pattern(size_t i, unsigned seed) { return (unsigned char)(i * 31 + seed * 7 + 1); }
static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = pattern(i, seed);
}
/* Index of the first byte that is not the pattern, or n. */
static size_t first_bad(const void *p, size_t n, unsigned seed) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != pattern(i, seed)) return i;
  return n;
}

/* ---- allocation calls as data ------------------------------------------- */

enum op { MALLOC, CALLOC, MEMALIGN, ALIGNED_ALLOC, VALLOC, PVALLOC, REALLOC_NULL };
static const char *const op_name[] = {"malloc", "calloc", "memalign", "aligned_alloc",
                                      "valloc", "pvalloc", "realloc"};

static void *call_op(const struct api *a, enum op op, size_t x, size_t y) {
  switch (op) {
    case MALLOC: return a->malloc_(x);
    case CALLOC: return a->calloc_(x, y);
    case MEMALIGN: return a->memalign_(x, y);
    case ALIGNED_ALLOC: return a->aligned_alloc_(x, y);
    case VALLOC: return a->valloc_(x);
    case PVALLOC: return a->pvalloc_(x);
    case REALLOC_NULL: return a->realloc_(NULL, x);
  }
  return NULL;
}

static void op_call_name(char *buf, size_t cap, enum op op, size_t x, size_t y) {
  if (op == REALLOC_NULL) snprintf(buf, cap, "realloc(NULL, %s)", sz(x));
  else if (op == CALLOC || op == MEMALIGN || op == ALIGNED_ALLOC) snprintf(buf, cap, "%s(%s, %s)", op_name[op], sz(x), sz(y));
  else snprintf(buf, cap, "%s(%s)", op_name[op], sz(x));
}

/* Runs op(x[, y]) on both sides, compares the outcomes and checks each block
 * (alignment `align`, `want` usable bytes).  The blocks go to keep[] when it
 * is given, else they are freed.  Returns whether the outcomes matched. */
static bool alloc_pair(enum op op, size_t x, size_t y, size_t want, size_t align, void *keep[2]) {
  char call[96];
  op_call_name(call, sizeof call, op, x, y);
  struct out o[2];
  void *p[2];
  FOR_SIDES(s) {
    errno = SENTINEL;
    p[s] = call_op(side[s], op, x, y);
    o[s] = ptr_out(p[s]);
  }
  bool ok = same(call, o);
  FOR_SIDES(s) {
    if (p[s]) check_block(s, call, p[s], want, align);
    if (keep) keep[s] = p[s];
    else side[s]->free_(p[s]);
  }
  return ok;
}

/* Requests no allocator can satisfy: beyond PTRDIFF_MAX (glibc's
 * checked_request2size gives ENOMEM), or larger than the 47-bit address
 * space (mmap and sbrk fail: ENOMEM), whatever the overcommit policy. */
static const size_t impossible[] = {
    SIZE_MAX,        SIZE_MAX - 1,    SIZE_MAX - 2,    SIZE_MAX - 7,      SIZE_MAX - 8,
    SIZE_MAX - 15,   SIZE_MAX - 16,   SIZE_MAX - 31,   SIZE_MAX - 32,     SIZE_MAX - 4095,
    SIZE_MAX - 4096, SIZE_MAX - 4097, SIZE_MAX - 65535, PMAX + 2,         PMAX + 1,
    PMAX,            PMAX - 1,        PMAX - 4096,     PMAX - 65536,      (size_t)1 << 62,
    (size_t)1 << 48, (size_t)1 << 47,
};

/* ---- malloc ---------------------------------------------------------------- */

/* malloc(0) returns a unique non-NULL pointer in glibc (a minimum chunk).
 * It runs first, so vigil's initialisation happens inside a compared call
 * and must not leave errno set either. */
static void test_malloc_zero(void) {
  enum { N = 8 };
  void *z[N][2];
  for (int i = 0; i < N; i++) alloc_pair(MALLOC, 0, 0, 0, 16, z[i]);
  FOR_SIDES(s) {
    for (int i = 0; i < N; i++) {
      CHECK(z[i][s] != NULL, "%s: malloc(0) #%d returned NULL", side[s]->name, i);
      for (int j = 0; j < i; j++)
        CHECK(z[i][s] == NULL || z[i][s] != z[j][s], "%s: malloc(0) #%d and #%d both returned %p", side[s]->name, j,
              i, z[i][s]);
    }
    for (int i = 0; i < N; i++) side[s]->free_(z[i][s]);
  }
}

/* Every size 1..64, sizes around each power of two up to 64 MiB (class and
 * threshold edges on both sides: glibc's 128 KiB mmap threshold, vigil's
 * 64 KiB small limit), page multiples, and the impossible sizes: NULL with
 * ENOMEM in glibc (malloc.c: checked_request2size, sysmalloc). */
static void test_malloc(void) {
  for (size_t n = 1; n <= 64; n++) alloc_pair(MALLOC, n, 0, n, 16, NULL);
  for (unsigned k = 0; k <= 26; k++) {
    size_t p = (size_t)1 << k;
    alloc_pair(MALLOC, p - 1, 0, p - 1, 16, NULL);
    alloc_pair(MALLOC, p, 0, p, 16, NULL);
    alloc_pair(MALLOC, p + 1, 0, p + 1, 16, NULL);
  }
  static const size_t pages[] = {3 * 4096, 5 * 4096, 17 * 4096, 33 * 4096, 100 * 4096, 2 * MiB + 4096, 3 * MiB};
  for (size_t i = 0; i < ARRAY_LEN(pages); i++) alloc_pair(MALLOC, pages[i], 0, pages[i], 16, NULL);
  for (size_t i = 0; i < ARRAY_LEN(impossible); i++) alloc_pair(MALLOC, impossible[i], 0, 0, 16, NULL);
}

/* 16-byte alignment (MALLOC_ALIGNMENT on x86_64) for every size up to 2048,
 * three live blocks per size so that distinct slots are looked at, then a
 * sample of larger sizes across vigil's small/span/large boundaries. */
static void test_min_alignment(void) {
  for (size_t n = 1; n <= 2048; n++) {
    void *b[3][2];
    for (int i = 0; i < 3; i++) alloc_pair(MALLOC, n, 0, n, 16, b[i]);
    for (int i = 0; i < 3; i++) FOR_SIDES(s) side[s]->free_(b[i][s]);
  }
  static const size_t larger[] = {2049,   3000,   4000,   5000,   8191,    10000,   20000,  32767,
                                  40000,  65535,  65537,  70000,  100000,  131071,  131073, 250000,
                                  500000, 999999, 3000001, 10000000, 33554431, 33554433};
  for (size_t i = 0; i < ARRAY_LEN(larger); i++) {
    void *b[3][2];
    for (int j = 0; j < 3; j++) alloc_pair(MALLOC, larger[i], 0, larger[i], 16, b[j]);
    for (int j = 0; j < 3; j++) FOR_SIDES(s) side[s]->free_(b[j][s]);
  }
}

/* ---- calloc --------------------------------------------------------------- */

/* Argument pairs: zero products (glibc: like malloc(0), non-NULL), normal
 * ones, and products that overflow size_t or exceed PTRDIFF_MAX: glibc 2.36
 * multiplies into a ptrdiff_t and fails both with ENOMEM. */
static void test_calloc_args(void) {
  static const struct {
    size_t a, b;
  } args[] = {
      {0, 0},          {0, 1},        {1, 0},           {0, SIZE_MAX},   {SIZE_MAX, 0},
      {1, 1},          {3, 5},        {16, 16},         {1000, 1000},    {1, 200000},
      {SIZE_MAX / 2 + 1, 2},          {2, SIZE_MAX / 2 + 1},             {SIZE_MAX, SIZE_MAX},
      {SIZE_MAX, 2},   {(size_t)1 << 32, (size_t)1 << 32},               {SIZE_MAX / 3 + 1, 3},
      {PMAX, 1},       {1, PMAX},     {PMAX + 1, 1},    {1, PMAX + 1},   {PMAX / 2 + 1, 2},
      {PMAX / 2, 2},   {(PMAX + 1) / 4096, 4096},       {SIZE_MAX, 1},   {1, SIZE_MAX},
  };
  for (size_t i = 0; i < ARRAY_LEN(args); i++) {
    size_t n;
    bool ovf = __builtin_mul_overflow(args[i].a, args[i].b, &n);
    void *p[2];
    alloc_pair(CALLOC, args[i].a, args[i].b, ovf ? 0 : n, 16, p);
    FOR_SIDES(s) {
      if (p[s] && !ovf)
        CHECK(all_zero(p[s], n), "%s: calloc(%s, %s) is not zeroed", side[s]->name, sz(args[i].a), sz(args[i].b));
      side[s]->free_(p[s]);
    }
  }
}

/* calloc must zero recycled memory: dirty `count` blocks of about n bytes
 * (their whole usable size), free them, then calloc the same number and
 * check every byte.  Large sizes exercise vigil's cache of freed mappings
 * and glibc's reuse of freed heap chunks. */
static void test_calloc_dirty(void) {
  static const size_t sizes[] = {1,     8,     16,     24,     100,     256,    1000,   4096,
                                 10000, 65536, 65537, 100000, 131072, 200000, MiB, 5 * MiB};
  for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
    size_t n = sizes[i];
    int count = n <= 65536 ? 32 : 4;
    void *blk[32][2];
    for (int round = 0; round < 2; round++) {
      FOR_SIDES(s) {
        for (int j = 0; j < count; j++) {
          blk[j][s] = side[s]->malloc_(n + (size_t)(j % 2) * 8);
          if (blk[j][s]) memset(blk[j][s], 0xa5, side[s]->usable_(blk[j][s]));
        }
        for (int j = 0; j < count; j++) side[s]->free_(blk[j][s]);
      }
      for (int j = 0; j < count; j++) {
        /* alternate the argument order: calloc(n, 1) and calloc(1, n) */
        size_t a = j % 2 ? n : 1, b = j % 2 ? 1 : n;
        alloc_pair(CALLOC, a, b, n, 16, blk[j]);
        FOR_SIDES(s) {
          if (blk[j][s])
            CHECK(all_zero(blk[j][s], n), "%s: calloc(%zu, %zu) #%d (round %d) returned dirty memory", side[s]->name,
                  a, b, j, round);
        }
      }
      for (int j = 0; j < count; j++) FOR_SIDES(s) side[s]->free_(blk[j][s]);
    }
  }
}

/* ---- realloc and reallocarray ------------------------------------------- */

/* One side's block: n bytes of pattern `seed`. */
struct blk {
  void *p;
  size_t n;
  unsigned seed;
};

/* One resize on both sides: realloc(p, x), or reallocarray(p, x, y) when
 * `array`; messages write a block of n bytes as p[n].  The outcomes must match.  On success the old contents must be
 * there up to the smaller size; on failure the old block must be intact and
 * fully usable (glibc leaves it alone).  A NULL from a zero-size request
 * means the block was freed (glibc: REALLOC_ZERO_BYTES_FREES). */
static void resize(struct blk b[2], bool array, size_t x, size_t y) {
  size_t n = x;
  bool ovf = array && __builtin_mul_overflow(x, y, &n);
  char call[96];
  if (array) snprintf(call, sizeof call, "reallocarray(%s, %s, %s)", b[G].p ? "p" : "NULL", sz(x), sz(y));
  else snprintf(call, sizeof call, "realloc(%s[%zu], %s)", b[G].p ? "p" : "NULL", b[G].n, sz(x));
  struct out o[2];
  void *q[2];
  size_t u0[2];
  FOR_SIDES(s) {
    u0[s] = b[s].p ? side[s]->usable_(b[s].p) : 0;
    errno = SENTINEL;
    q[s] = array ? side[s]->reallocarray_(b[s].p, x, y) : side[s]->realloc_(b[s].p, x);
    o[s] = ptr_out(q[s]);
  }
  same(call, o);
  FOR_SIDES(s) {
    const char *who = side[s]->name;
    if (q[s]) {
      size_t keep = b[s].p ? (b[s].n < n ? b[s].n : n) : 0;
      size_t bad = first_bad(q[s], keep, b[s].seed);
      CHECK(bad == keep, "%s: %s lost the contents at byte %zu of %zu", who, call, bad, keep);
      check_block(s, call, q[s], ovf ? 0 : n, 16);
      b[s] = (struct blk){q[s], n, b[s].seed + 1};
      fill(q[s], n, b[s].seed);
    } else if (!ovf && n == 0) {
      b[s] = (struct blk){NULL, 0, b[s].seed};
    } else if (b[s].p) {
      size_t bad = first_bad(b[s].p, b[s].n, b[s].seed);
      CHECK(bad == b[s].n, "%s: failed %s damaged the block at byte %zu of %zu", who, call, bad, b[s].n);
      size_t u = side[s]->usable_(b[s].p);
      CHECK(u == u0[s], "%s: failed %s changed the usable size %zu -> %zu", who, call, u0[s], u);
      if (u > b[s].n) memset((unsigned char *)b[s].p + b[s].n, 0x3c, u - b[s].n); /* the tail is writable */
    }
  }
}

static void blk_free(struct blk b[2]) {
  FOR_SIDES(s) {
    side[s]->free_(b[s].p);
    b[s] = (struct blk){NULL, 0, 0};
  }
}

/* Start both sides from an allocation op, filled with the pattern. */
static void blk_start(struct blk b[2], enum op op, size_t x, size_t y) {
  void *p[2];
  alloc_pair(op, x, y, op == MEMALIGN ? y : x, op == MEMALIGN ? promised_align(x) : 16, p);
  size_t n = op == MEMALIGN ? y : x;
  FOR_SIDES(s) {
    b[s] = (struct blk){p[s], p[s] ? n : 0, 3};
    if (p[s]) fill(p[s], n, 3);
  }
}

/* realloc(NULL, n) is malloc(n); realloc(p, 0) frees p and returns NULL
 * with errno untouched (glibc 2.36 __libc_realloc calls __libc_free, which
 * keeps errno); growth and shrinking keep the contents across vigil's small,
 * span and large blocks and glibc's heap and mmapped chunks; impossible
 * sizes fail with ENOMEM and leave the block alone. */
static void test_realloc(void) {
  static const size_t from_null[] = {0, 1, 100, 70000, 300000, SIZE_MAX, PMAX + 1, PMAX};
  for (size_t i = 0; i < ARRAY_LEN(from_null); i++)
    alloc_pair(REALLOC_NULL, from_null[i], 0, from_null[i] > PMAX / 2 ? 0 : from_null[i], 16, NULL);

  static const size_t to_zero[] = {1, 100, 4096, 70000, 300000, 5 * MiB};
  for (size_t i = 0; i < ARRAY_LEN(to_zero); i++) {
    struct blk b[2];
    blk_start(b, MALLOC, to_zero[i], 0);
    resize(b, false, 0, 0);
    blk_free(b); /* no-op when both freed it, as glibc does */
  }

  static const size_t chain[] = {8,      100,     70000, 300000, 5 * MiB, 16,     1,     200000, 65536,
                                 65537,  131072,  24,    2 * MiB, 100,    33 * MiB, 40000, 16};
  struct blk b[2];
  blk_start(b, MALLOC, chain[0], 0);
  for (size_t i = 1; i < ARRAY_LEN(chain); i++) resize(b, false, chain[i], 0);
  blk_free(b);

  /* The same from blocks with large alignment (vigil: spans and offset
   * large mappings). */
  static const size_t aligns[] = {4096, 65536, MiB};
  static const size_t chain2[] = {300000, 600000, 100, 5 * MiB, 70000};
  for (size_t a = 0; a < ARRAY_LEN(aligns); a++) {
    blk_start(b, MEMALIGN, aligns[a], 1000);
    for (size_t i = 0; i < ARRAY_LEN(chain2); i++) resize(b, false, chain2[i], 0);
    blk_free(b);
  }

  static const size_t bases[] = {32, 5000, 100000, MiB};
  for (size_t i = 0; i < ARRAY_LEN(bases); i++) {
    for (size_t j = 0; j < ARRAY_LEN(impossible); j++) {
      blk_start(b, MALLOC, bases[i], 0);
      resize(b, false, impossible[j], 0);
      resize(b, false, 2 * bases[i], 0); /* still a working block */
      blk_free(b);
    }
  }
}

/* glibc 2.36 reallocarray: ENOMEM when nmemb * size overflows (block kept),
 * otherwise exactly realloc(p, nmemb * size), so a zero product frees. */
static void test_reallocarray(void) {
  static const struct {
    size_t a, b;
  } overflow[] = {
      {SIZE_MAX, 2}, {2, SIZE_MAX}, {SIZE_MAX / 2 + 1, 2}, {(size_t)1 << 32, (size_t)1 << 32},
      {SIZE_MAX, SIZE_MAX}, {PMAX / 2 + 1, 2}, {PMAX + 1, 1}, {1, SIZE_MAX},
  };
  static const size_t bases[] = {100, 200000};
  struct blk b[2];
  for (size_t i = 0; i < ARRAY_LEN(bases); i++) {
    for (size_t j = 0; j < ARRAY_LEN(overflow); j++) {
      blk_start(b, MALLOC, bases[i], 0);
      resize(b, true, overflow[j].a, overflow[j].b);
      resize(b, true, 2, bases[i]); /* still a working block */
      blk_free(b);
    }
  }

  /* From NULL: malloc of the product, including 0 (non-NULL). */
  static const struct {
    size_t a, b;
  } fresh[] = {{10, 10}, {0, 0}, {0, SIZE_MAX}, {SIZE_MAX, 0}, {1, 300000}, {SIZE_MAX, 2}};
  for (size_t i = 0; i < ARRAY_LEN(fresh); i++) {
    b[G] = b[V] = (struct blk){NULL, 0, 0};
    resize(b, true, fresh[i].a, fresh[i].b);
    blk_free(b);
  }

  /* Growth and shrinking keep the contents; a zero count or size frees. */
  static const size_t counts[] = {10, 1000, 50000, 3, 9000};
  b[G] = b[V] = (struct blk){NULL, 0, 0};
  for (size_t i = 0; i < ARRAY_LEN(counts); i++) resize(b, true, counts[i], 8);
  resize(b, true, 0, 8);
  blk_free(b);
  blk_start(b, MALLOC, 64, 0);
  resize(b, true, 8, 0);
  blk_free(b);
}

/* ---- memalign, aligned_alloc, posix_memalign, valloc, pvalloc ----------- */

/* glibc 2.36 _mid_memalign: alignment <= 16 is plain malloc (0 included);
 * a non-power of two is rounded up to one (aligned_alloc is the same
 * function in 2.36; 2.38 started to reject those); an alignment above
 * SIZE_MAX/2+1 is EINVAL; SIZE_MAX/2+1 itself, or any alignment whose
 * padding pushes the request past PTRDIFF_MAX, is ENOMEM. */
static void test_memalign(void) {
  static const size_t sizes[] = {0, 1, 15, 16, 17, 100, 1000, 4095, 4096, 4097, 65536, 100000, 300000, MiB + 1};
  static const size_t odd[] = {3,    5,    7,     12,    17,    24,        31,      33,      48,
                               100,  1000, 4095,  4097,  10000, 65535,     65537,   MiB - 1, MiB + 1};
  static const size_t odd_sizes[] = {1, 100, 5000, 100000};
  static const size_t zero_sizes[] = {0, 1, 100, 100000, SIZE_MAX, PMAX + 1};
  static const size_t huge_align[] = {SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, SIZE_MAX, SIZE_MAX - 1,
                                      (size_t)1 << 62,  ((size_t)1 << 62) + 1, PMAX, (size_t)1 << 48};
  static const size_t huge_align_sizes[] = {0, 1, 4096, MiB, SIZE_MAX};
  static const size_t normal_align[] = {8, 32, 64, 4096, MiB};
  static const enum op ops[] = {MEMALIGN, ALIGNED_ALLOC};

  for (size_t o = 0; o < ARRAY_LEN(ops); o++) {
    enum op op = ops[o];
    for (unsigned k = 0; k <= 22; k++) {
      size_t a = (size_t)1 << k;
      for (size_t i = 0; i < ARRAY_LEN(sizes); i++) alloc_pair(op, a, sizes[i], sizes[i], promised_align(a), NULL);
    }
    for (size_t i = 0; i < ARRAY_LEN(odd); i++)
      for (size_t j = 0; j < ARRAY_LEN(odd_sizes); j++)
        alloc_pair(op, odd[i], odd_sizes[j], odd_sizes[j], promised_align(odd[i]), NULL);
    for (size_t i = 0; i < ARRAY_LEN(zero_sizes); i++)
      alloc_pair(op, 0, zero_sizes[i], zero_sizes[i] > PMAX ? 0 : zero_sizes[i], 16, NULL);
    for (size_t i = 0; i < ARRAY_LEN(huge_align); i++)
      for (size_t j = 0; j < ARRAY_LEN(huge_align_sizes); j++)
        alloc_pair(op, huge_align[i], huge_align_sizes[j], 0, 1, NULL);
    for (size_t i = 0; i < ARRAY_LEN(normal_align); i++)
      for (size_t j = 0; j < ARRAY_LEN(impossible); j++) alloc_pair(op, normal_align[i], impossible[j], 0, 1, NULL);
  }
}

/* glibc 2.36 posix_memalign: EINVAL (errno untouched) unless the alignment
 * is a power-of-two multiple of sizeof(void *); otherwise _mid_memalign,
 * and ENOMEM (errno as malloc left it) when that fails.  *memptr is only
 * written on success. */
static void test_posix_memalign(void) {
  static const size_t aligns[] = {0,  1,  2,  4,  8,  12, 16, 20, 24, 3 * sizeof(void *), 40, 48, 64, 96, 128, 4097,
                                  4104, 65536 + 8, SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 9, SIZE_MAX, SIZE_MAX - 7,
                                  (size_t)1 << 62, (size_t)1 << 23};
  static const size_t sizes[] = {0, 1, 100, 5000, 100000, MiB, SIZE_MAX, PMAX + 1, PMAX, PMAX - 4096};
  size_t all[ARRAY_LEN(aligns) + 23];
  size_t na = 0;
  for (size_t i = 0; i < ARRAY_LEN(aligns); i++) all[na++] = aligns[i];
  for (unsigned k = 0; k <= 22; k++) all[na++] = (size_t)1 << k;

  static char poison_target;
  void *const poison = &poison_target;
  for (size_t i = 0; i < na; i++) {
    for (size_t j = 0; j < ARRAY_LEN(sizes); j++) {
      size_t a = all[i], n = sizes[j];
      char call[96];
      snprintf(call, sizeof call, "posix_memalign(&p, %s, %s)", sz(a), sz(n));
      struct out o[2];
      void *m[2];
      FOR_SIDES(s) {
        m[s] = poison;
        errno = SENTINEL;
        int r = side[s]->posix_memalign_(&m[s], a, n);
        o[s] = int_out(r);
      }
      same(call, o);
      FOR_SIDES(s) {
        if (o[s].ret == 0) {
          CHECK(m[s] != poison && m[s] != NULL, "%s: %s returned 0 without a block", side[s]->name, call);
          if (m[s] != poison && m[s] != NULL) {
            check_block(s, call, m[s], n, promised_align(a));
            side[s]->free_(m[s]);
          }
        } else {
          CHECK(m[s] == poison, "%s: %s failed (%ld) but wrote *memptr", side[s]->name, call, o[s].ret);
        }
      }
    }
  }
}

/* valloc is memalign(pagesize, n).  pvalloc rounds n up to the page size
 * first, ENOMEM when that overflows (glibc 2.36 __libc_pvalloc); its block
 * must hold the rounded size.  pvalloc(0) is a page-aligned non-NULL block. */
static void test_valloc_pvalloc(void) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  const size_t sizes[] = {0, 1, 100, ps - 1, ps, ps + 1, 3 * ps, 65536, 100000, MiB + 1};
  for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
    alloc_pair(VALLOC, sizes[i], 0, sizes[i], ps, NULL);
    alloc_pair(PVALLOC, sizes[i], 0, round_up(sizes[i], ps), ps, NULL);
  }
  const size_t huge[] = {SIZE_MAX,          SIZE_MAX - 1,       SIZE_MAX - ps + 2, SIZE_MAX - ps + 1,
                         SIZE_MAX - ps,     SIZE_MAX - ps - 1,  SIZE_MAX - 2 * ps, PMAX + 1,
                         PMAX,              PMAX - ps,          PMAX - ps + 1,     (size_t)1 << 48};
  for (size_t i = 0; i < ARRAY_LEN(huge); i++) {
    alloc_pair(VALLOC, huge[i], 0, 0, 1, NULL);
    alloc_pair(PVALLOC, huge[i], 0, 0, 1, NULL);
  }
}

/* ---- malloc_usable_size, free -------------------------------------------- */

/* malloc_usable_size(NULL) is 0 in glibc; for blocks, usable >= requested
 * (checked by check_block on every block of this test; here a geometric
 * sweep up to 8 MiB). */
static void test_usable_size(void) {
  struct out o[2];
  size_t u[2];
  FOR_SIDES(s) {
    errno = SENTINEL;
    u[s] = side[s]->usable_(NULL);
    o[s] = int_out((long)u[s]);
  }
  same("malloc_usable_size(NULL)", o);
  FOR_SIDES(s) CHECK(u[s] == 0, "%s: malloc_usable_size(NULL) = %zu", side[s]->name, u[s]);
  for (size_t n = 1; n < 8 * MiB; n = n * 5 / 4 + 1) alloc_pair(MALLOC, n, 0, n, 16, NULL);
}

/* glibc 2.33+ __libc_free saves and restores errno, so free never changes
 * it, even when it unmaps or trims.  Blocks of every kind: small, span,
 * large, cached and evicted mappings, aligned ones, and free(NULL). */
static void free_pair(const char *what, void *p[2]) {
  struct out o[2];
  FOR_SIDES(s) {
    errno = SENTINEL;
    side[s]->free_(p[s]);
    o[s] = void_out();
  }
  char call[96];
  snprintf(call, sizeof call, "free(%s)", what);
  same(call, o);
  FOR_SIDES(s) CHECK(o[s].err == SENTINEL, "%s: %s changed errno to %d", side[s]->name, call, o[s].err);
}

static void test_free_errno(void) {
  void *p[2] = {NULL, NULL};
  free_pair("NULL", p);
  static const size_t sizes[] = {1, 16, 1000, 4096, 65536, 65537, 100000, 131073, 300000, MiB, 5 * MiB, 40 * MiB};
  char what[64];
  for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
    FOR_SIDES(s) p[s] = side[s]->malloc_(sizes[i]);
    snprintf(what, sizeof what, "malloc(%zu)", sizes[i]);
    free_pair(what, p);
    FOR_SIDES(s) p[s] = side[s]->calloc_(1, sizes[i]);
    snprintf(what, sizeof what, "calloc(1, %zu)", sizes[i]);
    free_pair(what, p);
    FOR_SIDES(s) p[s] = side[s]->memalign_(MiB, sizes[i]);
    snprintf(what, sizeof what, "memalign(1 MiB, %zu)", sizes[i]);
    free_pair(what, p);
    FOR_SIDES(s) p[s] = side[s]->realloc_(side[s]->malloc_(10), sizes[i]);
    snprintf(what, sizeof what, "realloc(malloc(10), %zu)", sizes[i]);
    free_pair(what, p);
  }
  /* More freed mappings than vigil's cache holds: evictions unmap. */
  enum { N = 24 };
  void *many[N][2];
  for (int i = 0; i < N; i++) FOR_SIDES(s) many[i][s] = side[s]->malloc_(200000 + (size_t)i * 4096);
  for (int i = 0; i < N; i++) {
    snprintf(what, sizeof what, "malloc(%zu) #%d of %d", 200000 + (size_t)i * 4096, i, N);
    free_pair(what, many[i]);
  }
  /* Many small blocks: emptied pages go back to the arena and get trimmed. */
  enum { M = 4096 };
  static void *small[M][2];
  for (int i = 0; i < M; i++) FOR_SIDES(s) small[i][s] = side[s]->malloc_(512);
  struct out o[2];
  FOR_SIDES(s) {
    o[s] = (struct out){.kind = K_VOID, .err = SENTINEL}; /* the first errno a free left, if any */
    for (int i = 0; i < M; i++) {
      errno = SENTINEL;
      side[s]->free_(small[i][s]);
      if (errno != SENTINEL && o[s].err == SENTINEL) o[s].err = errno;
    }
  }
  same("free() of each of 4096 blocks of 512 bytes", o);
}

/* ---- malloc_trim, malloc_info, mallinfo2, malloc_stats ------------------ */

/* glibc 2.36 malloc_trim returns 1 when memory went back to the system,
 * else 0; which one is an implementation detail, so only the range and
 * errno are compared. */
static void test_trim(void) {
  static const size_t pads[] = {0, 4096, MiB, SIZE_MAX};
  for (size_t i = 0; i < ARRAY_LEN(pads); i++) {
    char call[64];
    snprintf(call, sizeof call, "malloc_trim(%s)", sz(pads[i]));
    struct out o[2];
    int r[2];
    FOR_SIDES(s) {
      void *p = side[s]->malloc_(300000); /* something to give back */
      side[s]->free_(p);
      errno = SENTINEL;
      r[s] = side[s]->trim_(pads[i]);
      o[s] = void_out();
    }
    same(call, o);
    FOR_SIDES(s) CHECK(r[s] == 0 || r[s] == 1, "%s: %s returned %d", side[s]->name, call, r[s]);
  }
}

/* A minimal well-formedness check: tags balance, attributes are
 * name="value", no stray '<', '>' or '&' in text, one root element named
 * `root`, nothing but white space around it. */
static bool xml_ok(const char *x, const char *root, char *why, size_t cap) {
  char stack[32][32];
  int depth = 0, roots = 0;
  const char *p = x;
#define FAIL(...) return snprintf(why, cap, __VA_ARGS__), false
  while (*p) {
    if (*p != '<') {
      if (*p == '>' || *p == '&') FAIL("stray '%c' at offset %td", *p, p - x);
      if (depth == 0 && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') FAIL("text outside the root at %td", p - x);
      p++;
      continue;
    }
    p++;
    bool closing = *p == '/';
    if (closing) p++;
    size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:");
    if (len == 0 || len >= 32) FAIL("bad tag name at offset %td", p - x);
    char name[32];
    memcpy(name, p, len);
    name[len] = 0;
    p += len;
    if (closing) {
      if (*p != '>') FAIL("junk in </%s>", name);
      if (depth == 0 || strcmp(stack[depth - 1], name) != 0)
        FAIL("</%s> closes <%s>", name, depth ? stack[depth - 1] : "nothing");
      depth--;
      p++;
      continue;
    }
    if (depth == 0) {
      roots++;
      if (roots > 1) FAIL("second root element <%s>", name);
      if (strcmp(name, root) != 0) FAIL("root is <%s>, not <%s>", name, root);
    }
    for (;;) {
      size_t ws = strspn(p, " \t\r\n");
      p += ws;
      if (*p == '>' || (p[0] == '/' && p[1] == '>')) break;
      size_t an = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:");
      if (an == 0 || ws == 0) FAIL("bad attribute in <%s> at offset %td", name, p - x);
      p += an;
      if (p[0] != '=' || p[1] != '"') FAIL("attribute without =\"...\" in <%s>", name);
      p += 2;
      size_t vl = strcspn(p, "\"<&");
      if (p[vl] != '"') FAIL("unterminated attribute value in <%s>", name);
      p += vl + 1;
    }
    if (*p == '/') {
      p += 2; /* empty element */
      continue;
    }
    if (depth == 32) FAIL("nesting too deep");
    strcpy(stack[depth++], name);
    p++;
  }
  if (depth) FAIL("<%s> never closed", stack[depth - 1]);
  if (roots == 0) FAIL("no root element");
#undef FAIL
  return true;
}

/* glibc's malloc_info layout, which tools parse: the children of each
 * <heap>, and those of <malloc> other than the heaps, as "name:type" words
 * in order.  Elements named vigil... (vigil's own numbers), the entries of
 * <sizes> (one per bin or class) and glibc's aspace "subheaps" (arenas
 * other than main) are left out.  Also the "rest" sizes: the heaps' must
 * add up to the total's. */
#define INFO_HEAP "sizes total:fast total:rest system:current system:max aspace:total aspace:mprotect"
#define INFO_TOP "total:fast total:rest total:mmap system:current system:max aspace:total aspace:mprotect"

static const char *attr(const char *tag, const char *end, const char *name, char *val, size_t cap) {
  char key[32];
  snprintf(key, sizeof key, " %s=\"", name);
  const char *a = strstr(tag, key);
  if (a == NULL || a > end) return NULL;
  a += strlen(key);
  size_t n = strcspn(a, "\"");
  if (n >= cap) n = cap - 1;
  memcpy(val, a, n);
  val[n] = 0;
  return val;
}

static bool info_layout(const char *doc, char *why, size_t cap) {
  char heap[512] = "", top[512] = "", name[32], type[32], size[32];
  int depth = 0, heaps = 0;
  unsigned long long heap_rest = 0, top_rest = 0;
  bool in_heap = false;
  for (const char *p = strchr(doc, '<'); p; p = strchr(p + 1, '<')) {
    const char *end = strchr(p, '>');
    bool closing = p[1] == '/', empty = end[-1] == '/';
    size_t len = strspn(p + 1 + closing, "abcdefghijklmnopqrstuvwxyz-_");
    snprintf(name, sizeof name, "%.*s", (int)len, p + 1 + closing);
    if (closing) {
      depth--;
      if (depth == 1 && in_heap) {
        if (strcmp(heap, INFO_HEAP) != 0) return snprintf(why, cap, "a <heap> holds \"%.80s\"", heap), false;
        in_heap = false;
      }
      continue;
    }
    if (depth == 0 && !(strcmp(name, "malloc") == 0 && attr(p, end, "version", type, sizeof type) && !strcmp(type, "1")))
      return snprintf(why, cap, "the root is not <malloc version=\"1\">"), false;
    bool skip = strncmp(name, "vigil", 5) == 0 || depth > 2 ||
                (attr(p, end, "type", type, sizeof type) && strcmp(type, "subheaps") == 0);
    if (depth == 1 && strcmp(name, "heap") == 0) {
      in_heap = true;
      heap[0] = 0;
      heaps++;
    } else if (!skip && depth >= 1) {
      char word[64];
      snprintf(word, sizeof word, "%s%s%s", name, attr(p, end, "type", type, sizeof type) ? ":" : "",
               attr(p, end, "type", type, sizeof type) ? type : "");
      char *list = depth == 2 && in_heap ? heap : top;
      if (depth == 1 || in_heap) snprintf(list + strlen(list), 512 - strlen(list), "%s%s", *list ? " " : "", word);
      if (!strcmp(word, "total:rest") && attr(p, end, "size", size, sizeof size))
        *(depth == 2 ? &heap_rest : &top_rest) += strtoull(size, NULL, 10);
    }
    if (!empty) depth++;
  }
  if (heaps == 0) return snprintf(why, cap, "no <heap>"), false;
  if (strcmp(top, INFO_TOP) != 0) return snprintf(why, cap, "<malloc> holds \"%.80s\"", top), false;
  if (heap_rest != top_rest)
    return snprintf(why, cap, "the heaps' rest sizes add up to %llu, the total says %llu", heap_rest, top_rest), false;
  return true;
}

/* glibc 2.36 __malloc_info: any options but 0 are rejected before anything
 * is written, by `return EINVAL` (22) with errno untouched, not the -1 and
 * errno that malloc_info(3) describes; with 0 it writes one
 * <malloc version="..."> document and returns 0.  vigil's document must be well-formed XML too, in
 * glibc's layout (the same checkers run on glibc's, which proves them). */
static void test_malloc_info(void) {
  static const int bad_opts[] = {1, 2, -1, INT_MIN, INT_MAX};
  for (size_t i = 0; i < ARRAY_LEN(bad_opts); i++) {
    char call[64];
    snprintf(call, sizeof call, "malloc_info(%d, fp)", bad_opts[i]);
    struct out o[2];
    size_t len[2];
    FOR_SIDES(s) {
      char *buf = NULL;
      FILE *fp = open_memstream(&buf, &len[s]);
      REQUIRE(fp != NULL, "open_memstream failed");
      errno = SENTINEL;
      int r = side[s]->info_(bad_opts[i], fp);
      o[s] = int_out(r);
      fclose(fp);
      free(buf);
    }
    same(call, o);
    FOR_SIDES(s) CHECK(len[s] == 0, "%s: rejected %s still wrote %zu bytes", side[s]->name, call, len[s]);
  }

  struct out o[2];
  char *doc[2];
  size_t len[2];
  FOR_SIDES(s) {
    void *p = side[s]->malloc_(1000), *q = side[s]->malloc_(300000); /* something to report */
    FILE *fp = open_memstream(&doc[s], &len[s]);
    REQUIRE(fp != NULL, "open_memstream failed");
    errno = SENTINEL;
    int r = side[s]->info_(0, fp);
    o[s] = int_out(r);
    fclose(fp);
    side[s]->free_(p);
    side[s]->free_(q);
  }
  same("malloc_info(0, fp)", o);
  FOR_SIDES(s) {
    char why[128];
    CHECK(strncmp(doc[s], "<malloc", 7) == 0, "%s: malloc_info(0) output starts with \"%.20s\"", side[s]->name, doc[s]);
    CHECK(xml_ok(doc[s], "malloc", why, sizeof why), "%s: malloc_info(0) output is not well-formed XML: %s",
          side[s]->name, why);
    CHECK(info_layout(doc[s], why, sizeof why), "%s: malloc_info(0) output is not in glibc's layout: %s",
          side[s]->name, why);
    free(doc[s]);
  }
}

/* mallinfo2's uordblks counts bytes in use: 1 MiB of live 64-byte blocks
 * must show, on both sides.  For vigil, freeing them must take it back
 * down, and mallinfo (the int version) must agree with mallinfo2. */
static void test_mallinfo(void) {
  enum { N = 16384, SIZE = 64 }; /* N * SIZE = 1 MiB */
  static void *blocks[N];
  FOR_SIDES(s) {
    const char *who = side[s]->name;
    struct mallinfo2 before = side[s]->mallinfo2_();
    for (int i = 0; i < N; i++) blocks[i] = side[s]->malloc_(SIZE);
    struct mallinfo2 during = side[s]->mallinfo2_();
    CHECK(during.uordblks >= before.uordblks + MiB, "%s: uordblks %zu -> %zu after allocating 1 MiB", who,
          before.uordblks, during.uordblks);
    if (s == V) {
      struct mallinfo m1 = vigil_mallinfo();
      CHECK(m1.uordblks == (int)during.uordblks && m1.arena == (int)during.arena && m1.hblkhd == (int)during.hblkhd,
            "vigil: mallinfo (%d, %d, %d) disagrees with mallinfo2 (%zu, %zu, %zu)", m1.uordblks, m1.arena, m1.hblkhd,
            during.uordblks, during.arena, during.hblkhd);
    }
    for (int i = 0; i < N; i++) side[s]->free_(blocks[i]);
    if (s == V) {
      struct mallinfo2 after = side[s]->mallinfo2_();
      CHECK(after.uordblks + MiB <= during.uordblks, "vigil: uordblks %zu -> %zu after freeing 1 MiB",
            during.uordblks, after.uordblks);
    }
  }
}

/* malloc_stats prints glibc's layout to stderr; both must print the totals
 * block.  stderr is redirected to a temporary file for the call.  Then the
 * same from a thread with a cancel pending (glibc BZ 22830,
 * malloc/tst-malloc-stats-cancellation.c): every fprintf is a cancellation
 * point, so an allocator that leaves cancellation on stops after its first
 * write, and the totals never come.  Cancellation must be on again after
 * the call. */
static void *stats_cancelled(void *arg) {
  const struct api *a = arg;
  pthread_cancel(pthread_self());
  a->stats_();
  /* Cancellation must be on again, with the cancel still pending; it is
   * not acted on here (unwinding would dlopen libgcc_s in the test). */
  int prev = -1;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &prev);
  return (void *)(intptr_t)(prev == PTHREAD_CANCEL_ENABLE);
}

static void stats_text(int s, bool cancel, char *text, size_t cap) {
  FILE *t = tmpfile();
  REQUIRE(t != NULL, "tmpfile failed");
  fflush(stderr);
  int saved = dup(2);
  REQUIRE(saved >= 0 && dup2(fileno(t), 2) == 2, "cannot redirect stderr");
  if (cancel) {
    pthread_t th;
    void *ret = NULL;
    REQUIRE(pthread_create(&th, NULL, stats_cancelled, (void *)side[s]) == 0, "pthread_create");
    pthread_join(th, &ret);
    CHECK(ret == (void *)1, "%s: malloc_stats left cancellation %s", side[s]->name,
          ret == PTHREAD_CANCELED ? "on (the thread was cancelled in it)" : "disabled");
  } else {
    side[s]->stats_();
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(t);
  size_t n = fread(text, 1, cap - 1, t);
  text[n] = 0;
  fclose(t);
}

static void test_malloc_stats(void) {
  static const char *const lines[] = {"Total (incl. mmap):", "system bytes", "in use bytes", "max mmap regions",
                                      "max mmap bytes"};
  for (int cancel = 0; cancel < 2; cancel++) {
    FOR_SIDES(s) {
      /* glibc's side only without the cancel: its malloc_stats in a thread
       * with a cancel pending left main_arena's lock held in about one
       * run in twenty here (the next malloc in main then hung); cause not
       * found. */
      if (cancel && s == G) continue;
      char text[4096];
      stats_text(s, cancel, text, sizeof text);
      for (size_t i = 0; i < ARRAY_LEN(lines); i++)
        CHECK(strstr(text, lines[i]) != NULL, "%s: malloc_stats output%s lacks \"%s\"", side[s]->name,
              cancel ? " in a thread with a cancel pending" : "", lines[i]);
    }
  }
}

/* ---- mallopt (last: it changes both allocators) ------------------------- */

/* glibc 2.36 __libc_mallopt returns 1 unless a setter refuses, and only
 * M_MXFAST does: above MAX_FAST_SIZE (160 on 64-bit; a negative int becomes
 * a huge size_t) it returns 0.  M_MMAP_THRESHOLD takes every value, -1 and
 * above 32 MiB included (Debian's 2.36 returns 1 and then serves a 40 MiB
 * malloc from the heap: the old HEAP_MAX_SIZE/2 cap is gone).  M_ARENA_TEST
 * and M_ARENA_MAX ignore values <= 0, M_CHECK_ACTION is a no-op since 2.34,
 * and unknown parameters return 1. */
#define P(x) x, #x
static const struct {
  int param;
  const char *name;
  int values[10];
  int nvalues;
} mallopt_table[] = {
    {P(M_MXFAST), {0, 1, 8, 64, 128, 159, 160, 161, 200, -1}, 10},
    {P(M_MXFAST), {16, 17, 80, 176, INT_MAX, INT_MIN}, 6},
    {P(M_TRIM_THRESHOLD), {0, 1, 128 * 1024, 64 << 20, -1, INT_MAX, INT_MIN}, 7},
    {P(M_TOP_PAD), {0, 4096, 128 * 1024, -1, INT_MAX}, 5},
    {P(M_MMAP_THRESHOLD), {0, 4096, 128 * 1024, 32 << 20, (32 << 20) + 1, 64 << 20, -1, INT_MAX, INT_MIN}, 9},
    {P(M_MMAP_MAX), {0, 1, 65536, -1, INT_MAX}, 5},
    {P(M_CHECK_ACTION), {0, 1, 2, 3, 7, -1}, 6},
    {P(M_PERTURB), {0, 1, 0xaa, 255, 256, -1}, 6},
    {P(M_ARENA_TEST), {0, 1, 8, -1, INT_MAX}, 5},
    {P(M_ARENA_MAX), {0, 1, 2, -1, INT_MAX}, 5},
    {P(M_NLBLKS), {0, 1, -1}, 3},
    {P(M_GRAIN), {0, 1, -1}, 3},
    {P(M_KEEP), {0, 1, -1}, 3},
    {0, "0", {0, 1, -1}, 3},
    {-9, "-9", {0, 1}, 2},
    {9, "9", {0, 1}, 2},
    {12345, "12345", {0, 1, -1}, 3},
    {-100, "-100", {0, 1, -1}, 3},
    {INT_MIN, "INT_MIN", {0, 1}, 2},
    {INT_MAX, "INT_MAX", {0, 1}, 2},
};

static void mallopt_pair(int param, const char *name, int value) {
  char call[96];
  snprintf(call, sizeof call, "mallopt(%s, %d)", name, value);
  struct out o[2];
  FOR_SIDES(s) {
    errno = SENTINEL;
    int r = side[s]->mallopt_(param, value);
    o[s] = int_out(r);
  }
  same(call, o);
}

/* Defaults to go back to: glibc's documented ones (mallopt(3)); vigil's
 * arena_max default is one per CPU, glibc's 8 per core on 64-bit. */
static void mallopt_restore(void) {
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  if (cpus < 1) cpus = 1;
  FOR_SIDES(s) {
    const struct api *a = side[s];
    a->mallopt_(M_MXFAST, 64 * (int)sizeof(size_t) / 4);
    a->mallopt_(M_TRIM_THRESHOLD, 128 * 1024);
    a->mallopt_(M_TOP_PAD, 128 * 1024);
    a->mallopt_(M_MMAP_THRESHOLD, 128 * 1024);
    a->mallopt_(M_MMAP_MAX, 65536);
    a->mallopt_(M_PERTURB, 0);
    a->mallopt_(M_ARENA_MAX, (int)(s == G ? 8 * cpus : cpus));
  }
}

static void test_mallopt(void) {
  for (size_t i = 0; i < ARRAY_LEN(mallopt_table); i++) {
    for (int j = 0; j < mallopt_table[i].nvalues; j++)
      mallopt_pair(mallopt_table[i].param, mallopt_table[i].name, mallopt_table[i].values[j]);
    mallopt_restore();
  }

  /* With M_PERTURB set, malloc'd memory is filled with ~byte and freed
   * memory with byte in glibc; calloc must still return zeroes. */
  mallopt_pair(M_PERTURB, "M_PERTURB", 0xaa);
  static const size_t sizes[] = {1, 100, 5000, 100000, MiB};
  for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
    void *p[2];
    FOR_SIDES(s) side[s]->free_(side[s]->malloc_(sizes[i]));
    alloc_pair(CALLOC, 1, sizes[i], sizes[i], 16, p);
    FOR_SIDES(s) {
      if (p[s]) CHECK(all_zero(p[s], sizes[i]), "%s: calloc(1, %zu) under M_PERTURB is not zeroed", side[s]->name, sizes[i]);
      side[s]->free_(p[s]);
    }
  }
  mallopt_pair(M_PERTURB, "M_PERTURB", 0);
  mallopt_restore();

  /* Both still work after all that. */
  static const size_t after[] = {1, 1000, 200000, MiB, 40 * MiB};
  for (size_t i = 0; i < ARRAY_LEN(after); i++) {
    alloc_pair(MALLOC, after[i], 0, after[i], 16, NULL);
    alloc_pair(CALLOC, after[i], 1, after[i], 16, NULL);
  }
}

int main(void) {
  test_malloc_zero(); /* first: includes vigil's initialisation */
  test_malloc();
  test_min_alignment();
  test_calloc_args();
  test_calloc_dirty();
  test_realloc();
  test_reallocarray();
  test_memalign();
  test_posix_memalign();
  test_valloc_pvalloc();
  test_usable_size();
  test_free_errno();
  test_trim();
  test_malloc_info();
  test_mallinfo();
  test_malloc_stats();
  test_mallopt(); /* last: changes both allocators */
  printf("api_glibc: %d outcome mismatches against glibc\n", mismatches);
  return test_done("api_glibc");
}
