/* Target fork: fork while other threads are inside malloc and stdio.
 * Background threads hold FILE locks while they call vigil (as getline
 * does), run fflush(NULL) (the stdio list lock, then every FILE's lock) and
 * open_memstream; the program itself spawns threads and forks, and each
 * child runs its sub-program and must exit cleanly within the timeout.  A
 * fork handler that takes vigil's locks before the stdio list lock
 * deadlocks here (seed 000). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "vigil.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define HAVE_ASAN 1
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *shared;
static _Thread_local int holds_shared;

/* A noise thread that dies inside vigil (a bug found, or a planted mutant)
 * dies holding `shared`'s lock, while the flusher holds the stdio list lock
 * and waits for it.  The crash report then never came: libFuzzer's crash
 * handler opens the artifact file, which needs the list lock, and the
 * process hung (oss_fuzz_check.sh timed out on usable-minus-16).  So the
 * dying thread lets go of the FILE first: on the fatal signals, before the
 * handler that was there (libFuzzer's, ASan's), and before ASan's report
 * ends the process. */
static void let_go(void) {
  if (holds_shared) {
    holds_shared = 0;
    funlockfile(shared);
  }
}

static const int fatal_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
static struct sigaction before[sizeof fatal_signals / sizeof fatal_signals[0]];

static void on_fatal(int sig, siginfo_t *si, void *ctx) {
  let_go();
  for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
    if (fatal_signals[i] != sig) continue;
    if (before[i].sa_flags & SA_SIGINFO) {
      before[i].sa_sigaction(sig, si, ctx);
      return;
    }
    if (before[i].sa_handler != SIG_DFL && before[i].sa_handler != SIG_IGN) {
      before[i].sa_handler(sig);
      return;
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

#ifdef HAVE_ASAN
static void on_asan_report(const char *report) {
  (void)report;
  let_go();
}
#endif

static void let_go_on_crash(void) {
  for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
    struct sigaction sa = {0};
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* ASan runs its handlers on the alternate stack */
    sigemptyset(&sa.sa_mask);
    sigaction(fatal_signals[i], &sa, &before[i]);
  }
#ifdef HAVE_ASAN
  __asan_set_error_report_callback(on_asan_report);
#endif
}

/* Like getline: allocate (through vigil) while holding a FILE's lock. */
static void *locked_allocator(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg;
  for (;;) {
    flockfile(shared);
    holds_shared = 1;
    for (int i = 0; i < 8; i++) {
      s = s * 1103515245u + 12345u;
      /* Spans of 2-23 pages and large blocks: more lengths than a thread's
       * span cache holds, so the arena and large locks are taken here
       * while the FILE lock is held. */
      size_t n = (s >> 16) % 4 == 0 ? 70000 + (s >> 8) % 1500000 : (s >> 8) % 2000;
      void *p = vigil_malloc(n);
      vigil_free(p);
    }
    holds_shared = 0;
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
  let_go_on_crash();
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
