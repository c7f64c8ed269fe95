/* A minimal test harness: CHECK records a failure and carries on; the
 * program's exit status is the verdict (tests/run.sh). */
#ifndef VIGIL_TESTLIB_H
#define VIGIL_TESTLIB_H
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int tl_failures, tl_checks;

/* A white-box part of a test (vigil's modules called directly, its metadata
 * read) runs as vigil's own code does: under `make valgrind-check` memcheck
 * reports nothing from it (src/annotate.h; needs an internal header). */
#define WHITE_BOX(stmt) \
  do {                  \
    vg_ann_enter();     \
    stmt;               \
    vg_ann_leave();     \
  } while (0)
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

/* Guard-page probe: does reading this byte fault?  The first call installs
 * SIGSEGV and SIGBUS handlers that return here while probing and otherwise
 * re-raise with the default action. */
static sigjmp_buf tl_probe_env;
static volatile sig_atomic_t tl_probing;
static inline void tl_on_fault(int sig) {
  if (tl_probing) siglongjmp(tl_probe_env, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}
static inline int tl_readable(const void *addr) {
  static int installed;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tl_on_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    installed = 1;
  }
  if (sigsetjmp(tl_probe_env, 1)) {
    tl_probing = 0;
    return 0;
  }
  tl_probing = 1;
  (void)*(const volatile unsigned char *)addr;
  tl_probing = 0;
  return 1;
}
/* fn(arg) in a forked child, its stderr captured in out (cap bytes, NUL
 * terminated); the child's wait status. */
static inline int tl_in_child(void (*fn)(size_t), size_t arg, char *out, size_t cap) {
  int fds[2];
  REQUIRE(pipe(fds) == 0, "pipe");
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    fn(arg);
    _exit(0);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t r;
  while (len < cap - 1 && (r = read(fds[0], out + len, cap - 1 - len)) > 0) len += (size_t)r;
  out[len] = 0;
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  return st;
}
#endif
