/* The parent frees p, forks, and the child frees p again. */
#include "attack.h"
static char *p;
static void child(size_t n) {
  a_free(p);
  probe(n, NULL, 0);
  printf("survived\n");
}
ATTACK("tiny small medium large") {
  p = a_malloc(n);
  a_free(p);
  in_child(child, n);
}
