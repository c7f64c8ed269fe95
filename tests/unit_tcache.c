/* The thread cache (src/heap.h): a thread that frees another thread's small
 * block reuses it for its own next malloc of that class, up to tcache_count
 * blocks a class; the rest go home through the owner's remote list, and at
 * thread exit the cache empties into the pages.
 *
 * The block of a class freed last is held back, in neither the cache nor
 * its page, until the thread's next free of that class, so it is not the
 * next one handed out and a double free after a malloc of the same size is
 * still a double free.
 *
 * The program runs twice: as itself (default options), and again as a child
 * with VIGIL_OPTIONS=tcache_count=0, where the same steps must show the
 * cache off.  So the reuse check is shown
 * to depend on the cache. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap.h" /* white-box: the cache's entries */
#include "testlib.h"

#define SIZE 48
#define N 40 /* more than the default tcache_count (16) */

static int cache_on;
static void *mine[N];

/* In another thread: free main's block, then malloc the same size. */
static void *reuse(void *arg) {
  void *p = arg;
  vigil_free(vigil_malloc(SIZE)); /* the thread's heap exists from its first malloc */
  void *own = vigil_malloc(SIZE);
  vigil_free(p);
  /* p is held back as the block freed last; the next free puts it in the
   * cache (or, with no cache, sends it home), and holds own instead. */
  vigil_free(own);
  void *q = vigil_malloc(SIZE);
  if (cache_on) CHECK(q == p, "a freed foreign block was not reused: freed %p, got %p", p, q);
  else CHECK(q != p, "tcache_count=0, yet a foreign block came back: %p", p);
  CHECK(q != own, "the block freed last, %p, was the next one handed out", own);
  memset(q, 0x5a, SIZE);
  return q; /* main frees it */
}

/* In another thread: free N of main's blocks (more than its cache takes)
 * and exit without a malloc after them. */
static void *free_all(void *arg) {
  (void)arg;
  vigil_free(vigil_malloc(SIZE));
  for (int i = 0; i < N; i++) vigil_free(mine[i]);
  return NULL;
}

/* The newest block in the thread's cache of class cls, or NULL. */
static void *cache_top(struct heap *h, unsigned cls) {
  return h->tc_n[cls] != 0 ? h->tc_slot[h->tc_n[cls] - 1][cls] : NULL;
}

/* The cache's entries are in the heap, not in the blocks: a write after
 * free over a cached block's second word, where a list threaded through the
 * blocks keeps its link (as glibc's tcache does, and vigil's did), changes
 * nothing.  Here the write is the encoded address of a global, which such
 * a list would hand out. */
static char forged[64] __attribute__((aligned(64)));
static void link_overwrite(struct heap *h, unsigned cls) {
  void *a = vigil_malloc(SIZE), *b = vigil_malloc(SIZE), *c = vigil_malloc(SIZE);
  vigil_free(a);
  vigil_free(b); /* a goes into the cache, b is held */
  vigil_free(c); /* b goes into the cache */
  CHECK(cache_top(h, cls) == b && h->tc_n[cls] >= 2 && h->tc_slot[h->tc_n[cls] - 2][cls] == a,
        "a (%p) and b (%p) should be the newest cached blocks: newest %p", a, b, cache_top(h, cls));
  uintptr_t link = encode(forged, b);
  memcpy((char *)b + sizeof(void *), &link, sizeof link);
  void *x = vigil_malloc(SIZE), *y = vigil_malloc(SIZE);
  CHECK(x == b && y == a, "after a write over b's second word, malloc gave %p then %p, not b (%p) then a (%p)", x, y,
        b, a);
  vigil_free(x);
  vigil_free(y);
}

static void run(void) {
  size_t base = vigil_mallinfo2().uordblks;

  void *p = vigil_malloc(SIZE), *q;
  pthread_t t;
  pthread_create(&t, NULL, reuse, p);
  pthread_join(t, &q);
  vigil_free(q);

  /* N blocks freed by a thread that then exits: those it cached and those
   * it sent home must all reach main's pages (malloc_trim drains main's
   * remote list; remote frees count as in use until then).  Main's own
   * cache holds q, and mallinfo counts the caller's cache as free. */
  for (int i = 0; i < N; i++) mine[i] = vigil_malloc(SIZE);
  pthread_create(&t, NULL, free_all, NULL);
  pthread_join(t, NULL);
  vigil_malloc_trim(0);
  size_t now = vigil_mallinfo2().uordblks;
  CHECK(now == base, "in use: %zu bytes before, %zu after every block came back", base, now);

  /* malloc_trim empties the caller's cache into its pages. */
  struct heap *h = vg_tl_heap;
  unsigned cls = size_class(SIZE);
  void *r = vigil_malloc(SIZE);
  vigil_free(r);
  /* The block freed last is held, not cached, so it is not the next one
   * handed out, cache or not. */
  CHECK(h->tc_held[cls] == r && cache_top(h, cls) != r, "after a free of %p, the held block is %p and the newest cached %p",
        r, (void *)h->tc_held[cls], cache_top(h, cls));
  void *next = vigil_malloc(SIZE);
  CHECK(next != r, "the block just freed, %p, was the next one handed out", r);
  vigil_free(next);
  CHECK((cache_top(h, cls) == r) == cache_on, "the next free put %p in the cache: newest %p", r, cache_top(h, cls));
  vigil_malloc_trim(0);
  CHECK(h->tc_n[cls] == 0 && h->tc_held[cls] == NULL, "malloc_trim left %u blocks in the cache, %p held", h->tc_n[cls],
        (void *)h->tc_held[cls]);
  void *s = vigil_malloc(SIZE);
  CHECK(s == r || s == next, "a trimmed block (%p or %p) should be first on its page's free list, got %p", r, next, s);
  vigil_free(s);
  if (cache_on) link_overwrite(h, cls);
}

int main(int argc, char **argv) {
  const char *opt = getenv("VIGIL_OPTIONS");
  cache_on = !(opt && strstr(opt, "tcache_count=0"));
  WHITE_BOX(run());
  if (argc == 1) {
    /* This program again (readlink, not exec of /proc/self/exe: under
     * Valgrind that names the tool, and readlink is answered for us). */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(len > 0, "readlink /proc/self/exe");
    self[len] = 0;
    pid_t pid = fork();
    if (pid == 0) {
      setenv("VIGIL_OPTIONS", "tcache_count=0", 1);
      execl(self, argv[0], "off", (char *)NULL);
      _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the run with tcache_count=0 failed (status %#x)", st);
  }
  return test_done(cache_on ? "unit_tcache" : "unit_tcache (tcache_count=0)");
}
