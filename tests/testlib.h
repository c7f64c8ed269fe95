/* A minimal test harness: CHECK records a failure and carries on; the
 * program's exit status is the verdict (tests/run.sh). */
#ifndef VIGIL_TESTLIB_H
#define VIGIL_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>

static int tl_failures, tl_checks;
#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    tl_checks++;                                                           \
    if (!(cond)) {                                                         \
      tl_failures++;                                                       \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)
#define REQUIRE(cond, ...)                \
  do {                                    \
    CHECK(cond, __VA_ARGS__);             \
    if (!(cond)) exit(1);                 \
  } while (0)
static inline int test_done(const char *name) {
  printf("%s: %d checks, %d failed\n", name, tl_checks, tl_failures);
  if (tl_checks == 0) return 1; /* a test that checked nothing is a failure */
  return tl_failures ? 1 : 0;
}
#endif
