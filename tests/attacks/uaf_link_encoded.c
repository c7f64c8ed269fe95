/* Use after free by an attacker who knows glibc's safe-linking: the link at
 * the start of a freed block is (its address >> 12) XOR the next block. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *q = a_malloc(n), *p = a_malloc(n);
  a_free(q);
  a_free(p);
  uintptr_t t = ((uintptr_t)p >> 12) ^ ((uintptr_t)target + 64);
  memcpy(p, &t, sizeof t);
  probe(n, NULL, 0);
}
