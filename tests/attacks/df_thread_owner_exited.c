/* A thread allocates p, frees it, and exits; main, which never owned p,
 * frees it again. */
#include "attack.h"
static size_t size;
static void *alloc_free(void *arg) {
  (void)arg;
  char *p = a_malloc(size);
  a_free(p);
  return p;
}
ATTACK("tiny small medium large") {
  size = n;
  pthread_t t;
  void *p;
  if (pthread_create(&t, NULL, alloc_free, NULL) != 0) exit(2);
  pthread_join(t, &p);
  a_free(p);
  probe(n, NULL, 0);
}
