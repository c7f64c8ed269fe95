/* White-box tests of the allocator's locks (src/lock.c) and of fork from a
 * signal handler that interrupted vigil inside a lock (src/fork.c).
 *
 * A handler interrupting a critical section is simulated by taking the lock
 * directly in the thread that then forks or allocates: to the lock word that
 * is the same state.  Checked:
 *   - a free lock costs no system call, taken or released (no futex, and no
 *     signal masking: tests/cost_warm.sh watches the syscalls with strace);
 *   - contended, it still excludes (a counter under it never loses a step);
 *   - fork skips the locks its own thread holds instead of deadlocking, and
 *     the child allocates from another arena (with arena_max=1, one made
 *     for it);
 *   - taking a lock one's own thread holds aborts with a message, never
 *     hangs. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap.h"
#include "testlib.h"

static struct vg_lock test_lock = VG_LOCK_INIT;
static long counter;

static void *hammer(void *arg) {
  long n = (long)(intptr_t)arg;
  for (long i = 0; i < n; i++) {
    vg_lock(&test_lock);
    counter++;
    vg_unlock(&test_lock);
  }
  return NULL;
}

static void test_uncontended(void) {
  unsigned long f0 = load_relaxed(&vg_os_counts.futex);
  for (int i = 0; i < 1000000; i++) {
    vg_lock(&test_lock);
    vg_unlock(&test_lock);
  }
  CHECK(load_relaxed(&vg_os_counts.futex) == f0, "%lu futex calls for a lock nobody else wanted",
        load_relaxed(&vg_os_counts.futex) - f0);
  vg_lock(&test_lock);
  CHECK(vg_lock_mine(&test_lock), "a lock this thread holds is not seen as its own");
  vg_unlock(&test_lock);
  CHECK(!vg_lock_mine(&test_lock), "a free lock is seen as this thread's");
}

static void test_contended(void) {
  enum { T = 4, N = 200000 };
  pthread_t t[T];
  counter = 0;
  for (int i = 0; i < T; i++) pthread_create(&t[i], NULL, hammer, (void *)(intptr_t)N);
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
  CHECK(counter == (long)T * N, "counter %ld under the lock, want %ld", counter, (long)T * N);
  CHECK(load_relaxed(&test_lock.word) == 0, "lock word %#x after every thread released it", load_relaxed(&test_lock.word));
}

/* Runs `child` in a fork made while this thread holds `held`; returns the
 * wait status, and the child's stderr in `err`. */
static int fork_holding(struct vg_lock *held, int (*child)(void), char *err, size_t cap) {
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0, "pipe");
  alarm(20); /* a deadlocked fork fails the test */
  vg_lock(held);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 2);
    int rc = child();
    vg_ann_leave(); /* the WHITE_BOX this runs in ends here for the child */
    _exit(rc);
  }
  vg_unlock(held);
  alarm(0);
  close(pipefd[1]);
  ssize_t n = read(pipefd[0], err, cap - 1);
  err[n > 0 ? n : 0] = 0;
  close(pipefd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

static int child_span(void) {
  char *p = vigil_malloc(70000), *q = vigil_malloc(100);
  if (!p || !q) return 2;
  memset(p, 1, 70000);
  vigil_free(p);
  vigil_free(q);
  return 0;
}

static int child_large(void) {
  char *p = vigil_malloc(8 << 20);
  return p ? 0 : 2;
}

static void test_fork_holding(void) {
  char err[256];
  /* One arena, so the child's new heap would pick the held one. */
  vg_option_set(OPT_arena_max, 1);
  vigil_free(vigil_malloc(100)); /* this thread's heap and arena exist */
  struct heap *h = vg_heap_get();
  REQUIRE(h && h->arena, "heap");
  int st = fork_holding(&h->arena->lock, child_span, err, sizeof err);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "fork while holding the arena lock: child %s %d (stderr: %s)", WIFSIGNALED(st) ? "killed by" : "exit",
        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), err);
  CHECK(!vg_lock_mine(&h->arena->lock) && load_relaxed(&h->arena->lock.word) == 0,
        "the parent's arena lock is not free after the fork");
  /* The large lock cannot be avoided by a large allocation: the child must
   * stop with the message, not hang. */
  st = fork_holding(&vg_large_lock, child_large, err, sizeof err);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "re-entered large lock: child status %#x", st);
  CHECK(strstr(err, "vigil: allocator re-entered from a signal handler at 0x") == err, "child said: %s", err);
}

int main(void) {
  test_uncontended();
  test_contended();
  WHITE_BOX(test_fork_holding());
  return test_done("unit_locks");
}
