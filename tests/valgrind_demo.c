/* A user program with one heap error of its own, chosen by argv[1], for
 * tests/valgrind_demo.sh: with vigil as its malloc, memcheck must report it
 * (vigil describes its blocks with client requests, src/annotate.h), and
 * with vigil built without them it cannot.  "clean" has no error at all.
 * Plain malloc API: the program does not know which allocator it has. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned char sink;
static void *volatile keep; /* what the leak case drops */

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
