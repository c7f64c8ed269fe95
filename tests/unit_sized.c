/* C23's free_sized and free_aligned_sized (issue 10): the size and the
 * alignment a program passes are checked against the block.
 *   - Every size a block can honestly have must pass, for each way a block
 *     comes to be: malloc, calloc, realloc in place (a shrink kept, a grow)
 *     and moved, small, span and large, and the memalign family through
 *     free_aligned_sized.  A false alarm here would abort a correct program.
 *   - A size larger than the block, a size less than half of it (for a
 *     block over 128 bytes, not from the memalign family), and an alignment
 *     the block lacks, each abort in a child with its own message; the same
 *     block freed with its right size in a child exits cleanly, so the abort
 *     is the check's. */
#include <stdint.h>
#include <string.h>

#include "testlib.h"
#include "vigil.h"

/* Sizes across every range: tiny, small classes, spans, large. */
static const size_t sizes[] = {0,    1,     15,    16,    17,     100,     128,     129,      500,      1024,
                               1025, 5000,  40000, 65536, 65537,  100000,  300000,  1 << 20,  3 << 20,  (5 << 20) + 123};

static void test_honest_sizes(void) {
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    vigil_free_sized(vigil_malloc(n), n);
    vigil_free_sized(vigil_calloc(1, n), n);
    /* realloc: shrinks that stay in place, grows, and a shrink to a few
     * bytes (a large block keeps one page for it). */
    size_t targets[] = {n / 2 + 1, n + n / 2 + 1, n * 3, 7};
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
      if (targets[t] == 0) continue; /* realloc(p, 0) frees */
      char *p = vigil_malloc(n);
      REQUIRE(p != NULL, "malloc(%zu)", n);
      p = vigil_realloc(p, targets[t]);
      REQUIRE(p != NULL, "realloc(%zu -> %zu)", n, targets[t]);
      vigil_free_sized(p, targets[t]);
    }
    for (size_t align = 1; align <= 65536; align *= 4) {
      void *p = vigil_aligned_alloc(align, n);
      REQUIRE(p != NULL, "aligned_alloc(%zu, %zu)", align, n);
      vigil_free_aligned_sized(p, align, n);
    }
  }
  /* A block grown in small steps, as a string builder grows one. */
  char *p = NULL;
  size_t n = 0;
  for (int i = 0; i < 400; i++) {
    n += 1000 + (size_t)i * 37;
    p = vigil_realloc(p, n);
    REQUIRE(p != NULL, "realloc to %zu", n);
  }
  vigil_free_sized(p, n);
  vigil_free_sized(NULL, 123);
  vigil_free_aligned_sized(NULL, 64, 123); /* a false alarm anywhere above aborts the test */
}

/* The misuse in a child: it must die of SIGABRT with `message`, or, for
 * message NULL, exit 0 without a word. */
static void expect(const char *what, void (*misuse)(size_t), size_t arg, const char *message) {
  char out[256];
  int st = tl_in_child(misuse, arg, out, sizeof out);
  if (message == NULL)
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && out[0] == 0, "%s: status %#x, stderr '%s' (want a clean exit)", what, st, out);
  else
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strncmp(out, message, strlen(message)) == 0,
          "%s: status %#x, stderr '%s' (want '%s...')", what, st, out, message);
}

static void sized(size_t k) { /* k: 0 right, 1 one byte too many, 2 a third of it */
  size_t n = 3000;
  char *p = vigil_malloc(n);
  size_t u = vigil_malloc_usable_size(p);
  vigil_free_sized(p, k == 0 ? n : k == 1 ? u + 1 : n / 3);
}
static void sized_large(size_t k) {
  size_t n = (size_t)4 << 20;
  char *p = vigil_malloc(n);
  vigil_free_sized(p, k == 0 ? n : k == 1 ? vigil_malloc_usable_size(p) + 1 : n / 8);
}
static void aligned(size_t k) { /* k: 0 right, 1 an alignment the block lacks, 2 too big a size */
  char *p = vigil_aligned_alloc(256, 100);
  while (((uintptr_t)p & ((1 << 20) - 1)) == 0) p = vigil_aligned_alloc(256, 100); /* not 1 MiB-aligned by chance */
  vigil_free_aligned_sized(p, k == 1 ? (size_t)1 << 20 : 256, k == 2 ? 100000 : 100);
}
static void twice(size_t k) {
  (void)k;
  char *p = vigil_malloc(100);
  vigil_free(p);
  vigil_free_sized(p, 100);
}

int main(void) {
  test_honest_sizes();
  const char *size_msg = "vigil: free_sized with a size the block does not have at 0x";
  expect("free_sized, right size", sized, 0, NULL);
  expect("free_sized, size past the block", sized, 1, size_msg);
  expect("free_sized, a third of the size", sized, 2, size_msg);
  expect("free_sized of a large block, right size", sized_large, 0, NULL);
  expect("free_sized of a large block, a byte past it", sized_large, 1, size_msg);
  expect("free_sized of a large block, an eighth", sized_large, 2, size_msg);
  expect("free_aligned_sized, right", aligned, 0, NULL);
  expect("free_aligned_sized, 1 MiB alignment asked of a 256-aligned block", aligned, 1,
         "vigil: free_aligned_sized with a wrong alignment at 0x");
  expect("free_aligned_sized, size past the block", aligned, 2, size_msg);
  expect("free_sized after free", twice, 0, "vigil: double free at 0x");
  return test_done("unit_sized");
}
