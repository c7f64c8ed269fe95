/* The 16 bytes before a live block (where glibc keeps a chunk's sizes)
 * overwritten with 0x41, then the block freed. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *a = a_malloc(n), *b = a_malloc(n);
  memset(b - 16, 0x41, 16);
  a_free(b);
  void *live[] = {a};
  probe(n, live, 1);
}
