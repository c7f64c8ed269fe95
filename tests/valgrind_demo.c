/* A user program with one heap error of its own, chosen by argv[1], for
 * tests/valgrind_demo.sh: with vigil as its malloc, memcheck must report it
 * (vigil describes its blocks with client requests, src/annotate.h), and
 * with vigil built without them it cannot.  "clean" has no error at all;
 * "handoff" has none either, and helgrind and drd must see none.
 * Plain malloc API: the program does not know which allocator it has. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned char sink;
static void *volatile keep; /* what the leak case drops */

/* handoff: blocks main allocated are written and freed by another thread,
 * and main gets them back from malloc and writes them.  The only ordering
 * between the two writes that helgrind and drd could see is vigil's (its
 * remote-free stack and locks), which is what the case is about: the
 * thread tells main it is done through a pipe, which those tools do not
 * count as synchronisation, and main joins it only at the end. */
enum { HANDOFF_N = 256, HANDOFF_SIZE = 48 };
static unsigned char *handed[HANDOFF_N];
static int done_pipe[2];

static void *writer_then_free(void *arg) {
  (void)arg;
  for (int i = 0; i < HANDOFF_N; i++) memset(handed[i], 5, HANDOFF_SIZE);
  for (int i = 0; i < HANDOFF_N; i++) free(handed[i]);
  (void)!write(done_pipe[1], "x", 1);
  return NULL;
}

static __attribute__((noinline)) int handoff(void) {
  for (int i = 0; i < HANDOFF_N; i++)
    if ((handed[i] = malloc(HANDOFF_SIZE)) == NULL) return 2;
  pthread_t t;
  char c;
  if (pipe(done_pipe) != 0 || pthread_create(&t, NULL, writer_then_free, NULL) != 0) return 2;
  if (read(done_pipe[0], &c, 1) != 1) return 2;
  /* Until a block the thread freed comes back (its frees reach main's
   * pages through the remote stack, drained when main's run out). */
  static unsigned char *got[20000];
  int reused = 0, n;
  for (n = 0; n < 20000 && !reused; n++) {
    if ((got[n] = malloc(HANDOFF_SIZE)) == NULL) return 2;
    memset(got[n], 6, HANDOFF_SIZE); /* the write that follows the thread's */
    for (int i = 0; i < HANDOFF_N && !reused; i++) reused = got[n] == handed[i];
  }
  pthread_join(t, NULL);
  for (int i = 0; i < n; i++) free(got[i]);
  if (!reused) {
    fprintf(stderr, "valgrind_demo: handoff: no block came back in 20000 mallocs\n");
    return 3;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "clean";
  unsigned char *p = malloc(24);
  if (p == NULL) return 2;
  memset(p, 1, 24);
  if (strcmp(what, "overflow") == 0) {
    p[24] = 7; /* one past the 24 bytes asked for, inside vigil's 32-byte slot */
  } else if (strcmp(what, "use-after-free") == 0) {
    free(p);
    sink = p[8]; /* vigil's thread cache holds the block now */
    return 0;
  } else if (strcmp(what, "uninitialised") == 0) {
    unsigned char *q = malloc(100);
    if (q[50] == 3) puts("three"); /* a branch on a byte nobody wrote */
    free(q);
  } else if (strcmp(what, "leak") == 0) {
    keep = malloc(4000);
    keep = NULL; /* the only pointer to it is gone */
  } else if (strcmp(what, "handoff") == 0) {
    free(p);
    return handoff();
  } else if (strcmp(what, "clean") == 0) {
    /* Each path of a block's life, with no error: calloc, realloc in place
     * and moving, malloc_usable_size's bytes, a span and a large block. */
    unsigned char *z = calloc(10, 10), *s = malloc(200000), *l = malloc(8 << 20);
    if (!z || !s || !l || z[99] != 0) return 2;
    size_t u = malloc_usable_size(p);
    memset(p, 2, u);
    p = realloc(p, 20);
    p = realloc(p, 5000);
    memset(p + 20, 3, 4980);
    s[199999] = l[(8 << 20) - 1] = 1;
    s = realloc(s, 300000);
    l = realloc(l, 64 << 20);
    if (!p || !s || !l || p[19] != 2 || s[199999] != 1 || l[(8 << 20) - 1] != 1) return 2;
    free(z), free(s), free(l);
  } else {
    fprintf(stderr, "valgrind_demo: unknown case %s\n", what);
    return 2;
  }
  free(p);
  return 0;
}
