/* What every program of the attack suite shares (tests/attacks.sh runs
 * them).  A program is one misuse of the malloc API, written against the
 * standard names, so it runs under plain glibc and with vigil preloaded:
 *
 *   ATTACK("tiny small medium large") { ...misuse the heap with blocks of n bytes... }
 *
 * `prog ranges` prints the size ranges the misuse applies to; `prog RANGE`
 * runs it with that range's size.  If the allocator stops it, the process
 * dies (vigil and glibc abort with a message; a fault is a SIGSEGV whose
 * handler first names the object the faulting instruction is in, so that a
 * crash inside the allocator is told apart from the program's own access
 * that an allocator made fault on purpose).  If it survives, it probes the
 * heap for a primitive and prints one line:
 *
 *   primitive: WHAT   an overlapping, duplicate or attacker-chosen block
 *   survived          the misuse went unnoticed, and left no primitive
 *
 * Every call goes through a volatile pointer: the compiler must neither
 * warn about nor delete the deliberate misuse. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static void *(*volatile a_malloc)(size_t) = malloc;
static void (*volatile a_free)(void *) = free;
static void *(*volatile a_realloc)(void *, size_t) = realloc;
static void *(*volatile a_memalign)(size_t, size_t) = memalign;

/* The four size ranges of the issue: tiny, small, medium (64 KiB to 4 MiB,
 * vigil's spans) and large (vigil's own mappings, glibc's mmapped chunks). */
static const struct {
  const char *name;
  size_t n;
} ranges[] = {{"tiny", 24}, {"small", 1000}, {"medium", 256 << 10}, {"large", 8 << 20}};

/* A page-aligned target an attacker would like malloc to return. */
static char target[1 << 16] __attribute__((aligned(4096)));

static void survived(void) {
  printf("survived\n");
  fflush(stdout);
  exit(0);
}
static void primitive(const char *what) {
  printf("primitive: %s\n", what);
  fflush(stdout);
  exit(3);
}

static int overlaps(const char *a, size_t an, const char *b, size_t bn) { return a < b + bn && b < a + an; }

/* After the misuse: allocate blocks of n bytes (and of other sizes) and
 * look for a primitive among them, the blocks the program still holds
 * (live, nlive, each n bytes) and the target.  Frees what it took. */
static void probe(size_t n, void *const *live, int nlive) {
  enum { K = 6 };
  static const size_t other[] = {16, 24, 48, 100, 1000, 4096};
  char *got[2 * K];
  size_t sz[2 * K];
  for (int i = 0; i < 2 * K; i++) {
    sz[i] = i < K ? n : other[i - K];
    got[i] = a_malloc(sz[i]);
    if (got[i] == NULL) continue;
    if (overlaps(got[i], sz[i], target, sizeof target)) primitive("malloc returned the attacker's address");
    for (int j = 0; j < nlive; j++)
      if (live[j] && overlaps(got[i], sz[i], live[j], n)) primitive("malloc returned a block that overlaps a live one");
    for (int j = 0; j < i; j++)
      if (got[j] && overlaps(got[i], sz[i], got[j], sz[j])) primitive("malloc returned the same block twice");
    memset(got[i], 0x5a, sz[i]);
  }
  for (int i = 0; i < 2 * K; i++) a_free(got[i]);
}

/* In a child: fn(n), then the child's fate is the program's (the same
 * signal, or the same exit status). */
__attribute__((unused)) static void in_child(void (*fn)(size_t), size_t n) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) exit(2);
  if (pid == 0) {
    fn(n);
    exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0) {
  }
  if (WIFSIGNALED(st)) {
    signal(WTERMSIG(st), SIG_DFL);
    raise(WTERMSIG(st));
  }
  exit(WEXITSTATUS(st));
}

/* Another thread frees p (for vigil, a remote free when this thread owns p). */
static void *free_it(void *p) {
  a_free(p);
  return NULL;
}
__attribute__((unused)) static void free_in_thread(void *p) {
  pthread_t t;
  if (pthread_create(&t, NULL, free_it, p) != 0) exit(2);
  pthread_join(t, NULL);
}

/* A linear overflow of k bytes of `fill` past the request of a block whose
 * next neighbour is free, then free and probe. */
__attribute__((unused)) static void overflow_after(size_t n, size_t k, int fill) {
  char *a = a_malloc(n), *b = a_malloc(n), *c = a_malloc(n);
  a_free(b); /* a free neighbour, whose allocator words the overflow may reach */
  memset(a + n, fill, k);
  a_free(a);
  void *live[] = {c};
  probe(n, live, 1);
}

/* The house of spirit: a glibc chunk header (a plausible size, the next
 * chunk's size plausible too) written in front of at+64 in the attacker's
 * memory (512 bytes), which is then freed and allocated again. */
__attribute__((unused)) static void fake_block(char *at, size_t n) {
  memset(at, 0, 512);
  size_t sz = 0x40;
  memcpy(at + 64 - 8, &sz, sizeof sz);           /* the fake chunk's size */
  memcpy(at + 64 - 16 + sz + 8, &sz, sizeof sz); /* the next chunk's */
  a_free(at + 64);
  char *r = a_malloc(0x30);
  if (r == at + 64) primitive("malloc returned the attacker's address");
  probe(n, NULL, 0);
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
  ucontext_t *uc = ctx;
#if defined(__x86_64__)
  void *pc = (void *)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  void *pc = (void *)uc->uc_mcontext.pc;
#else
  void *pc = NULL;
  (void)uc;
#endif
  Dl_info di;
  const char *obj = pc && dladdr(pc, &di) && di.dli_fname ? di.dli_fname : "?";
  const char *base = strrchr(obj, '/');
  char line[512];
  int len = snprintf(line, sizeof line, "attack: SIGSEGV at %p, in %s\n", si->si_addr, base ? base + 1 : obj);
  if (len > 0) (void)!write(2, line, (size_t)len);
  signal(sig, SIG_DFL); /* the access runs again and kills the process */
}

static void attack(size_t n);
static const char *attack_ranges;

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ranges | tiny | small | medium | large\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "ranges") == 0) {
    printf("%s\n", attack_ranges);
    return 0;
  }
  for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
    if (strcmp(argv[1], ranges[i].name) == 0) {
      struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER};
      sigaction(SIGSEGV, &sa, NULL);
      sigaction(SIGBUS, &sa, NULL);
      attack(ranges[i].n);
      survived();
    }
  fprintf(stderr, "%s: unknown size range '%s'\n", argv[0], argv[1]);
  return 2;
}

#define ATTACK(r)                                            \
  static const char *attack_ranges = r;                      \
  static void attack(size_t n)
