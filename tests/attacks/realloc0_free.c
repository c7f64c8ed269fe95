/* realloc(p, 0), which frees p (glibc's behaviour), then free(p). */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  char *q = a_realloc(p, 0);
  a_free(p);
  void *live[] = {q};
  probe(n, live, q ? 1 : 0);
}
