/* Use after free by an attacker who knows nothing: the first 64 bytes of a
 * freed block (or all of it, if smaller) are overwritten with 0x41. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n), *keep = a_malloc(n);
  a_free(p);
  memset(p, 0x41, n < 64 ? n : 64);
  void *live[] = {keep};
  probe(n, live, 1);
}
