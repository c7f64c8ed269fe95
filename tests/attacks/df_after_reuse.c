/* free(p); q = malloc(same size), likely p again; free(p) frees q, so the
 * next malloc hands out q while the program still uses it. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  a_free(p);
  char *q = a_malloc(n);
  a_free(p);
  void *live[] = {q};
  probe(n, live, 1);
}
