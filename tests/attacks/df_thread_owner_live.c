/* main owns p; another thread frees it (a remote free, vigil's owner is
 * still alive); main frees it again. */
#include "attack.h"
ATTACK("tiny small medium large") {
  char *p = a_malloc(n);
  free_in_thread(p);
  a_free(p);
  probe(n, NULL, 0);
}
