/* The program tests/trace_record.sh records with build/libvigil-trace.so:
 * known counts of every malloc-family call, made by three threads while the
 * main thread forks 20 children (each makes 7 mallocs of 4321 bytes and
 * exits), 5 more from a signal handler raised between its own calls, and
 * 1 to 32 more (printed: timer_forks=N) from a 1 ms timer's handler that
 * interrupts a loop of mallocs, so some of those forks land inside one.
 * Each thread t makes 1000 mallocs of 1000+t bytes; main makes 10 callocs
 * of 3 x 333, 5 memaligns of 640 (align 64), 5 posix_memaligns of 650,
 * 5 aligned_allocs of 660, 5 reallocs from 700 to 7000, and 5 usable-size
 * calls.  The recorder must neither deadlock nor lose or invent a call.
 * Built with -fno-builtin: gcc would drop a free(malloc(n)) pair. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void *worker(void *arg) {
  size_t t = (size_t)arg;
  for (int i = 0; i < 1000; i++) {
    char *p = malloc(1000 + t);
    if (!p) abort();
    p[0] = (char)i;
    free(p);
  }
  return NULL;
}

static void child_work(void) {
  for (int i = 0; i < 7; i++) free(malloc(4321));
  exit(0); /* exit, not _exit: the child's trace is flushed at exit */
}

/* At most TIMER_FORKS_MAX: a fork can take longer than the timer's 1 ms on
 * a loaded machine, and a handler that always forks would then run back to
 * back, with main making no progress between them (a livelock: CI hit it). */
#define TIMER_FORKS_MAX 32
static volatile sig_atomic_t handler_forks, timer_forks;
static void on_timer(int sig) {
  (void)sig;
  if (timer_forks >= TIMER_FORKS_MAX) return;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0) timer_forks++;
}
static void on_signal(int sig) {
  (void)sig;
  pid_t pid = fork(); /* from a handler that may have interrupted a malloc */
  if (pid == 0) _exit(0);
  if (pid > 0) handler_forks++;
}

int main(void) {
  pthread_t th[3];
  for (size_t t = 0; t < 3; t++)
    if (pthread_create(&th[t], NULL, worker, (void *)t)) return 1;
  for (int i = 0; i < 20; i++) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) child_work();
  }
  for (size_t t = 0; t < 3; t++) pthread_join(th[t], NULL);
  signal(SIGUSR1, on_signal);
  for (int i = 0; i < 5; i++) {
    void *q = malloc(555);
    raise(SIGUSR1);
    free(q);
  }
  signal(SIGALRM, on_timer);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
  for (int i = 0; i < 20000 || timer_forks == 0; i++) free(malloc(777));
  it = (struct itimerval){{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &it, NULL);
  for (int i = 0; i < 10; i++) free(calloc(3, 333));
  for (int i = 0; i < 5; i++) free(memalign(64, 640));
  for (int i = 0; i < 5; i++) {
    void *p = NULL;
    if (posix_memalign(&p, 64, 650)) return 1;
    free(p);
  }
  for (int i = 0; i < 5; i++) free(aligned_alloc(64, 660));
  char *r = malloc(700);
  for (int i = 0; i < 5; i++) {
    r = realloc(r, 700 + 1300 * (size_t)(i + 1));
    if (malloc_usable_size(r) < 700 + 1300 * (size_t)(i + 1)) return 1;
  }
  free(r);
  int st, children = 0;
  while (wait(&st) > 0) children += WIFEXITED(st) && WEXITSTATUS(st) == 0;
  printf("timer_forks=%d\n", (int)timer_forks);
  return children == 25 + timer_forks && handler_forks == 5 ? 0 : 1;
}
