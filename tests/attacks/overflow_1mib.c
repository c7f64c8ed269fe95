/* One write of 8 bytes 1 MiB past the end of a block. */
#include "attack.h"
ATTACK("tiny small medium") {
  char *a = a_malloc(n);
  memset(a + n + (1 << 20), 0x41, 8);
  a_free(a);
  probe(n, NULL, 0);
}
