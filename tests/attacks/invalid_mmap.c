/* A page the program mapped itself. */
#include "attack.h"
ATTACK("tiny") {
  char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) exit(2);
  a_free(m + 4096);
  probe(n, NULL, 0);
}
