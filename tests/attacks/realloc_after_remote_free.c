/* Another thread frees a block main owns; main then reallocs it (the
 * remote free's mark must be seen by realloc, not only by free). */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  free_in_thread(p);
  char *q = a_realloc(p, 2 * n);
  void *live[] = {q};
  probe(n, live, q ? 1 : 0);
}
