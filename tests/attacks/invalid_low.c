/* A small integer taken for a pointer. */
#include "attack.h"
ATTACK("tiny") {
  a_free((void *)(uintptr_t)0x1010);
  probe(n, NULL, 0);
}
