/* A 16-byte overflow of a memalign(4096) block, then a double free of it. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *a = a_memalign(4096, n), *b = a_memalign(4096, n);
  memset(a + n, 0x41, 16);
  a_free(a);
  a_free(a);
  void *live[] = {b};
  probe(n, live, 1);
}
