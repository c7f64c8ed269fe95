/* The coverage of forked children, for libFuzzer (childcov.h).
 *
 * The counters sit among other globals on their first and last pages, so
 * the child moves whole pages: it copies them into the shared file, then
 * maps the file over them, MAP_FIXED.  Its other globals keep their values
 * and stay its own (the parent never maps the file there); its counters,
 * from then on, land where the parent can read them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "childcov.h"

/* The linker's bounds of the section; absent (NULL) without libFuzzer. */
extern uint8_t __start___sancov_cntrs[] __attribute__((weak));
extern uint8_t __stop___sancov_cntrs[] __attribute__((weak));

static int file = -1;
static unsigned char *view; /* the parent's mapping of the file, inherited */
static uintptr_t lo, len;   /* the whole pages that hold the counters */
static int tried;

void childcov_prepare(void) {
  if (tried) return;
  tried = 1;
  const char *off = getenv("VIGIL_CHILDCOV");
  if (off != NULL && strcmp(off, "0") == 0) return; /* tests/childcov.sh: the coverage without */
  uint8_t *start = __start___sancov_cntrs, *stop = __stop___sancov_cntrs;
  if (start == NULL || stop <= start) return;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  lo = (uintptr_t)start & ~(page - 1);
  len = ((uintptr_t)stop - lo + page - 1) & ~(page - 1);
  int f = memfd_create("vigil-childcov", MFD_CLOEXEC);
  void *v = MAP_FAILED;
  if (f >= 0 && ftruncate(f, (off_t)len) == 0) v = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  if (v == MAP_FAILED) {
    fprintf(stderr, "childcov: no shared file for the counters (%s): forked children's coverage is not counted\n",
            strerror(errno));
    if (f >= 0) close(f);
    return;
  }
  file = f;
  view = v;
}

/* Reads the redzones of the globals that share the pages, on purpose: not
 * for ASan's eyes.  Volatile, so that no memcpy (which ASan checks) is
 * made of it. */
__attribute__((no_sanitize("address"))) static void copy_pages(void) {
  const volatile uintptr_t *from = (const volatile uintptr_t *)lo;
  volatile uintptr_t *to = (volatile uintptr_t *)view;
  for (size_t i = 0; i < len / sizeof(uintptr_t); i++) to[i] = from[i];
}

void childcov_child(void) {
  if (view == NULL) return;
  copy_pages();
  /* If the map fails, the counters stay private: the parent then merges
   * the copy, the child's coverage up to here. */
  (void)mmap((void *)lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, file, 0);
}

static void merge(void) {
  if (view == NULL) return;
  uint8_t *mine = __start___sancov_cntrs;
  const unsigned char *theirs = view + ((uintptr_t)mine - lo);
  size_t n = (size_t)(__stop___sancov_cntrs - mine);
  for (size_t i = 0; i < n; i++)
    if (theirs[i] > mine[i]) mine[i] = theirs[i];
  memset(view, 0, len);
}

pid_t childcov_wait(pid_t pid, int *status) {
  pid_t w;
  while ((w = waitpid(pid, status, 0)) < 0 && errno == EINTR) {
  }
  merge();
  return w;
}
