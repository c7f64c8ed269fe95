/* The address of a global. */
#include "attack.h"
ATTACK("tiny") {
  a_free(target + 64);
  probe(n, NULL, 0);
}
