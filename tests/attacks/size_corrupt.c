/* The size field before a block is made to cover the next block too (the
 * overlapping-chunks technique), then the block is freed.  A first block
 * of the same size comes before it: the first block of a fresh segment
 * sits right after a guard page, where the write would fault by luck. */
#include "attack.h"
ATTACK("tiny small medium") {
  char *w = a_malloc(n), *a = a_malloc(n), *b = a_malloc(n), *guard = a_malloc(n);
  size_t chunk = (size_t)(b - a), bigger = 2 * chunk;
  memcpy(a - sizeof(size_t), &(size_t){bigger | 1}, sizeof(size_t));
  a_free(a);
  void *live[] = {w, b, guard};
  probe(n, live, 3);
  char *r = a_malloc(bigger - 16); /* the size glibc now believes a has */
  if (r && overlaps(r, bigger - 16, b, n)) primitive("malloc returned a block that overlaps a live one");
}
