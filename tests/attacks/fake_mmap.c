/* A fake block cloned onto the program's own mapping, freed, and
 * allocated again. */
#include "attack.h"
ATTACK("tiny") {
  char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) exit(2);
  fake_block(m, n);
}
