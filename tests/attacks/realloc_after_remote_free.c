/* Another thread frees a block main owns; main then reallocs it (the
 * remote free's mark must be seen by realloc, not only by free). */
#include "attack.h"
static void *free_it(void *p) {
  a_free(p);
  return NULL;
}
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  pthread_t t;
  if (pthread_create(&t, NULL, free_it, p) != 0) exit(2);
  pthread_join(t, NULL);
  char *q = a_realloc(p, 2 * n);
  void *live[] = {q};
  probe(n, live, q ? 1 : 0);
}
