/* Target fork: fork while other threads are inside malloc and stdio.
 * Background threads hold FILE locks while they call vigil (as getline
 * does), run fflush(NULL) (the stdio list lock, then every FILE's lock) and
 * open_memstream; the program itself spawns threads and forks, and each
 * child runs its sub-program and must exit cleanly within the timeout.  A
 * fork handler that takes vigil's locks before the stdio list lock
 * deadlocks here (seed 000). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "vigil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *shared;

/* Like getline: allocate (through vigil) while holding a FILE's lock. */
static void *locked_allocator(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg;
  for (;;) {
    flockfile(shared);
    for (int i = 0; i < 8; i++) {
      s = s * 1103515245u + 12345u;
      /* Spans of 2-23 pages and large blocks: more lengths than a thread's
       * span cache holds, so the arena and large locks are taken here
       * while the FILE lock is held. */
      size_t n = (s >> 16) % 4 == 0 ? 70000 + (s >> 8) % 1500000 : (s >> 8) % 2000;
      void *p = vigil_malloc(n);
      vigil_free(p);
    }
    funlockfile(shared);
  }
  return NULL;
}

static void *flusher(void *arg) {
  (void)arg;
  for (;;) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
      fputs("vigil", m);
      fflush(NULL);
      fclose(m);
      free(buf);
    }
  }
  return NULL;
}

static void start_noise(void) {
  static int started;
  if (started) return;
  started = 1;
  shared = tmpfile();
  if (!shared) shared = stdout;
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_create(&t, &a, locked_allocator, (void *)1);
  pthread_create(&t, &a, locked_allocator, (void *)2);
  pthread_create(&t, &a, flusher, NULL);
  pthread_attr_destroy(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  start_noise();
  const struct oracle_config cfg = {
      .target = "fork", .allow_threads = 1, .allow_fork = 1, .check_contents = 1, .background_allocs = 1};
  oracle_run_input(data, size, &cfg);
  return 0;
}
