/* A use-after-free write and a double free while four threads allocate
 * and free: the report must come, once, without a hang. */
#include "attack.h"
static void *churn(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg;
  void *keep[16] = {0};
  for (;;) {
    s = s * 1103515245u + 12345u;
    unsigned i = (s >> 8) % 16;
    a_free(keep[i]);
    keep[i] = a_malloc((s >> 12) % 5 == 0 ? (s >> 4) % (512 << 10) : (s >> 4) % 2048);
  }
  return NULL;
}
ATTACK("tiny small medium large") {
  pthread_t t;
  for (uintptr_t i = 0; i < 4; i++)
    if (pthread_create(&t, NULL, churn, (void *)(i + 1)) != 0) exit(2);
  usleep(20000);
  char *p = a_malloc(n);
  a_free(p);
  memset(p, 0x41, 16);
  a_free(p);
  probe(n, NULL, 0);
}
