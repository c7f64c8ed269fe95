/* A block from another allocator: glibc's own, through __libc_malloc (the
 * same allocator when the program runs on plain glibc). */
#include "attack.h"
extern void *__libc_malloc(size_t);
ATTACK("tiny small medium large") {
  char *p = __libc_malloc(n);
  if (p == NULL) exit(2);
  a_free(p);
  probe(n, NULL, 0);
}
