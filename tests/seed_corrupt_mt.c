/* Seed 000: on corruption glibc's malloc_printerr called backtrace(), which
 * called malloc: recursion, or deadlock on the arena lock or pthread_once.
 * vigil's fatal path never allocates and takes no allocator lock.  Each case
 * corrupts the heap in a child process while 8 other threads allocate and
 * free (taking every kind of allocator lock); the child must die of SIGABRT
 * within a second, having printed the exact message.  Repeated many times:
 * a deadlock that needs an unlucky interleaving must get its chance. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

/* Called through volatile pointers: the compiler must not see (and delete,
 * or warn about) the deliberate misuse. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_realloc)(void *, size_t) = realloc;
static size_t (*volatile do_usable)(void *) = malloc_usable_size;

static void *busy(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg;
  void *keep[32] = {0};
  for (;;) {
    s = s * 1103515245u + 12345u;
    unsigned i = (s >> 8) % 32;
    free(keep[i]);
    keep[i] = malloc((s >> 12) % 7 == 0 ? (s >> 4) % (300 << 10) : (s >> 4) % 1024);
  }
  return NULL;
}

static void *peer_block, *peer_block2;
static void *double_free_elsewhere(void *arg) {
  (void)arg;
  do_free(peer_block);
  do_free(peer_block); /* both remote: the first left the tag */
  return NULL;
}
static void *free_elsewhere(void *arg) {
  (void)arg;
  do_free(peer_block);
  if (peer_block2) do_free(peer_block2);
  return NULL; /* the thread's batch goes to the owner as it exits */
}
static void remote_free(void *p, void *q) {
  peer_block = p;
  peer_block2 = q;
  pthread_t t;
  pthread_create(&t, NULL, free_elsewhere, NULL);
  pthread_join(t, NULL);
}

/* Two blocks of a class the busy threads never use: the page stays
 * abandoned (no thread adopts it) and in use (the second block). */
static void *alloc_and_exit(void *arg) {
  (void)do_malloc((size_t)(uintptr_t)arg);
  return do_malloc((size_t)(uintptr_t)arg);
}

static void corrupt(int kind) {
  volatile char *p;
  switch (kind) {
    case 0: /* double free of a small block */
      p = do_malloc(64);
      do_free((void *)p);
      do_free((void *)p);
      break;
    case 1: /* interior pointer */
      p = do_malloc(256);
      do_free((void *)(p + 32));
      break;
    case 2: { /* a pointer vigil never handed out */
      char stack[64];
      do_free(stack + 16);
      break;
    }
    case 3: { /* use-after-free write over a cached block's tag and the
               * word after it: the malloc that takes it checks the tag */
      char *a = do_malloc(48), *b = do_malloc(48), *c = do_malloc(48);
      do_free(a);
      do_free(b); /* b is held back, a in the cache */
      do_free(c); /* c is held, b joins the cache */
      memset(b, 0x41, 16);
      for (int i = 0; i < 64; i++) (void)do_malloc(48);
      break;
    }
    case 4: /* double free of a large block */
      p = do_malloc(8 << 20);
      do_free((void *)p);
      do_free((void *)p);
      break;
    case 5: { /* double free by another thread: the first free left the tag (thread cache) */
      peer_block = do_malloc(40);
      pthread_t t;
      pthread_create(&t, NULL, double_free_elsewhere, NULL);
      pthread_join(t, NULL);
      break;
    }
    case 6: { /* double free into a page whose owner exited: found under the arena lock */
      pthread_t t;
      void *blk;
      pthread_create(&t, NULL, alloc_and_exit, (void *)(uintptr_t)3000);
      pthread_join(t, &blk);
      do_free(blk);
      do_free(blk);
      break;
    }
    /* Issue 10: a free by another thread, then one by the owner, found at
     * the owner's call (the child then has nothing left that would drain).
     * Before the remote tag the owner's free succeeded, and the block was
     * handed out again with a stale entry on the remote stack. */
    case 7:
      p = do_malloc(40);
      remote_free((void *)p, NULL);
      do_free((void *)p);
      break;
    case 8: /* ... or a realloc by the owner */
      p = do_malloc(40);
      remote_free((void *)p, NULL);
      p = do_realloc((void *)p, 100);
      break;
    case 9: /* ... or malloc_usable_size */
      p = do_malloc(40);
      remote_free((void *)p, NULL);
      (void)do_usable((void *)p);
      break;
    case 10: { /* a use-after-free write over the links of queued remote frees:
                * the drain checks each entry before it follows the link */
      char *a = do_malloc(40), *b = do_malloc(40);
      remote_free(a, b);
      memset(a + 8, 0x41, 8);
      memset(b + 8, 0x41, 8);
      for (int i = 0; i < 20000; i++) (void)do_malloc(40);
      break;
    }
    case 11: { /* a use-after-free write over the tag of the block held
                * back (case 3's is cached): the next free of its class,
                * which would put it in the cache, checks it */
      char *a = do_malloc(48), *b = do_malloc(48);
      do_free(a); /* a is held */
      memset(a, 0x41, 8);
      do_free(b);
      break;
    }
    case 12: { /* the same write over a cached block's tag, found when
                * malloc_trim empties the cache into the pages */
      char *a = do_malloc(48), *b = do_malloc(48), *c = do_malloc(48);
      do_free(a);
      do_free(b);
      do_free(c); /* the cache: a, b; c held */
      memset(b, 0x41, 8);
      malloc_trim(0);
      break;
    }
    case 13: { /* a free of a slot boundary that no malloc ever returned: 80
                * slots on, past the 4 KiB of slots a fresh page hands out */
      char *a = do_malloc(200);
      do_free(a + 80 * do_usable(a));
      break;
    }
    case 14: /* realloc of a freed large block */
      p = do_malloc(1 << 20);
      do_free((void *)p);
      p = do_realloc((void *)p, 100);
      break;
    case 15: { /* free of a large block's old address after realloc moved it */
      char *a = do_malloc(1 << 20), *b = do_realloc(a, 64 << 20);
      if (b != a) do_free(a);
      break;
    }
  }
}

static const struct {
  const char *name, *message;
} cases[] = {
    {"double free", "vigil: double free at 0x"},
    {"interior pointer", "vigil: invalid pointer at 0x"},
    {"foreign pointer", "vigil: invalid pointer at 0x"},
    {"free-list overwrite", "vigil: corrupted free list at 0x"},
    {"large double free", "vigil: double free at 0x"},
    {"remote double free", "vigil: double free at 0x"},
    {"double free, owner exited", "vigil: double free at 0x"},
    {"remote then local free", "vigil: double free at 0x"},
    {"remote free then realloc", "vigil: use of a freed block at 0x"},
    {"remote free then usable size", "vigil: use of a freed block at 0x"},
    {"overwritten remote list", "vigil: corrupted remote free list at 0x"},
    {"overwritten held block", "vigil: corrupted free list at 0x"},
    {"overwritten cached block, malloc_trim", "vigil: corrupted free list at 0x"},
    {"never-allocated slot", "vigil: invalid pointer at 0x"},
    {"large realloc after free", "vigil: use of a freed block at 0x"},
    {"free after a moving large realloc", "vigil: double free at 0x"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* Runs one case in a child; returns 0 when it died as it should. */
static int run_case(int kind, int round) {
  int fds[2];
  REQUIRE(pipe(fds) == 0, "pipe");
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    pthread_t t;
    for (int i = 0; i < 8; i++) pthread_create(&t, NULL, busy, (void *)(uintptr_t)(i * 77 + round + 1));
    usleep(2000); /* let them get going */
    corrupt(kind);
    /* A busy thread may have adopted the page: it then finds the double
     * free when it drains its remote list, moments later. */
    usleep(500000);
    _exit(0); /* not reached if vigil caught it */
  }
  close(fds[1]);
  char out[512] = {0};
  size_t len = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = 0, done = 0;
  while (!done) {
    struct pollfd pf = {fds[0], POLLIN, 0};
    if (poll(&pf, 1, 50) > 0 && len < sizeof out - 1) {
      ssize_t r = read(fds[0], out + len, sizeof out - 1 - len);
      if (r > 0) len += (size_t)r;
    }
    if (waitpid(pid, &st, WNOHANG) == pid) done = 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!done && (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 > 10000) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      close(fds[0]);
      CHECK(0, "%s (round %d): no abort within 10 s (hang; a caught case aborts in milliseconds, a missed one exits after 0.5 s); stderr: %s", cases[kind].name, round, out);
      return 1;
    }
  }
  ssize_t r;
  while (len < sizeof out - 1 && (r = read(fds[0], out + len, sizeof out - 1 - len)) > 0) len += (size_t)r;
  close(fds[0]);
  int ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strncmp(out, cases[kind].message, strlen(cases[kind].message)) == 0 &&
           strchr(out, '\n') == out + len - 1; /* exactly one line */
  CHECK(ok, "%s (round %d): %s %d, stderr '%s' (want '%s...')", cases[kind].name, round,
        WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), out,
        cases[kind].message);
  return !ok;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  int failed = 0;
  for (int round = 0; round < rounds; round++)
    for (int k = 0; k < NCASES; k++) failed += run_case(k, round);
  printf("%d cases x %d rounds, %d failed\n", NCASES, rounds, failed);
  return test_done("seed_corrupt_mt");
}
