/* Use after free: the attacker writes the target's address, as is, over
 * the first words of two freed blocks, then allocates. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *q = a_malloc(n), *p = a_malloc(n);
  a_free(q);
  a_free(p);
  uintptr_t t = (uintptr_t)target + 64;
  memcpy(p, &t, sizeof t);
  memcpy(q, &t, sizeof t);
  probe(n, NULL, 0);
}
