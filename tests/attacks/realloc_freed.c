/* realloc of a freed block. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  a_free(p);
  char *q = a_realloc(p, 2 * n);
  void *live[] = {q};
  probe(n, live, q ? 1 : 0);
}
