/* A pointer 16 bytes into a live block. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  a_free(p + 16);
  void *live[] = {p};
  probe(n, live, 1);
}
