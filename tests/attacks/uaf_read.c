/* Use after free, read: a freed block's contents are still visible.  (The
 * end of the block: its start may hold the allocator's own words.) */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  memset(p, 0x53, n);
  a_free(p);
  volatile char c = p[n - 1];
  (void)c;
  probe(n, NULL, 0);
}
