/* main owns p; another thread frees it (a remote free, vigil's owner is
 * still alive); main frees it again. */
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
  a_free(p);
  probe(n, NULL, 0);
}
