/* free(p), free(q), free(p): the second free of p is not at the head of a
 * list (glibc's fastbin check looks only there). */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n), *q = a_malloc(n);
  a_free(p);
  a_free(q);
  a_free(p);
  probe(n, NULL, 0);
}
