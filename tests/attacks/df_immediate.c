/* A block freed twice in a row. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  a_free(p);
  a_free(p);
  probe(n, NULL, 0);
}
