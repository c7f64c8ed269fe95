/* A fake block cloned onto the stack, freed, and allocated again. */
#include "attack.h"
ATTACK("tiny") {
  char buf[512] __attribute__((aligned(64)));
  fake_block(buf, n);
}
