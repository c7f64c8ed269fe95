/* realloc moves p to a larger block; the program frees the old p. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  char *guard = a_malloc(n); /* so p cannot grow in place */
  char *q = a_realloc(p, 4 * n + 4096);
  if (q == p) survived(); /* not moved: nothing to free twice */
  a_free(p);
  void *live[] = {guard};
  probe(n, live, 1);
}
