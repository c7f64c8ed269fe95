/* A freed block's first words overwritten in the parent; the child
 * allocates and must notice. */
#include "attack.h"
static void child(size_t n) {
  probe(n, NULL, 0);
  printf("survived\n");
}
ATTACK("tiny small medium large") {
  char *q = a_malloc(n), *p = a_malloc(n);
  a_free(q);
  a_free(p);
  memset(p, 0x41, 16);
  in_child(child, n);
}
