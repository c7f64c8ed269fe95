/* Writes to a malloc(0) block, then frees it. */
#include "attack.h"
ATTACK("tiny") {
  (void)n;
  char *p = a_malloc(0);
  memset(p, 0x41, 8);
  a_free(p);
  probe(16, NULL, 0);
}
