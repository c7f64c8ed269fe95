/* The address of a stack buffer. */
#include "attack.h"
ATTACK("tiny") {
  char buf[256] __attribute__((aligned(64)));
  memset(buf, 0, sizeof buf);
  a_free(buf + 64);
  probe(n, NULL, 0);
}
