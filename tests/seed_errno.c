/* Seed 003: free() must keep errno on every path, including the ones that
 * make syscalls (madvise, munmap).  The OS seam's fault injection makes each
 * of those syscalls clobber errno, as a failing one would; each case also
 * checks that its syscall really ran, so no case passes vacuously. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "testlib.h"

#define SENTINEL 4242

static unsigned long madvises(void) { return load_relaxed(&vg_os_counts.madvise) + load_relaxed(&vg_os_counts.map); }
static unsigned long unmaps(void) { return load_relaxed(&vg_os_counts.unmap); }

static void free_keeps_errno(const char *what, void *p) {
  errno = SENTINEL;
  free(p);
  CHECK(errno == SENTINEL, "%s: errno %d after free", what, errno);
}

static void *alloc_in_thread(void *arg) { return malloc((size_t)(uintptr_t)arg); }
static pthread_barrier_t handed, freed;
static void *owner_stays(void *arg) {
  *(void **)arg = malloc(100);
  pthread_barrier_wait(&handed);
  pthread_barrier_wait(&freed); /* alive while main frees its block */
  return NULL;
}

int main(void) {
  store_relaxed(&vg_os_fail_for_test, VG_FAIL_UNMAP | VG_FAIL_DECOMMIT);

  free_keeps_errno("free(NULL)", NULL);
  free_keeps_errno("small, local", malloc(24));

  /* Remote: the block's owner is alive... */
  pthread_t t;
  void *blk = NULL;
  pthread_barrier_init(&handed, NULL, 2);
  pthread_barrier_init(&freed, NULL, 2);
  pthread_create(&t, NULL, owner_stays, &blk);
  pthread_barrier_wait(&handed);
  free_keeps_errno("small, remote", blk);
  pthread_barrier_wait(&freed);
  pthread_join(t, NULL);
  pthread_create(&t, NULL, alloc_in_thread, (void *)(uintptr_t)48);
  pthread_join(t, &blk);
  /* ...is gone by now, so this frees into an abandoned page. */
  free_keeps_errno("small, owner exited", blk);

  /* A page that empties goes back to the arena, and past trim_threshold
   * the arena returns it with madvise. */
  mallopt(M_TRIM_THRESHOLD, 0);
  enum { N = 2000 };
  static void *v[N];
  for (int i = 0; i < N; i++) v[i] = malloc(512);
  unsigned long m0 = madvises();
  for (int i = 0; i < N - 1; i++) {
    errno = SENTINEL;
    free(v[i]);
    if (errno != SENTINEL) {
      CHECK(0, "page-return free %d: errno %d", i, errno);
      break;
    }
  }
  CHECK(madvises() > m0, "no decommit happened: the case did not run");
  free_keeps_errno("last small", v[N - 1]);

  /* Spans (between 64 KiB and the mmap threshold). */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  /* The thread keeps up to 1 MiB of freed spans (arena.c): fill that with
   * the first, so the second goes back to the arena and is returned.  The
   * span freed last is held back until the next span free (arena.c), so it
   * is the free of a third that sends the second back. */
  char *kept = malloc(900 << 10), *span = malloc(200 << 10), *third = malloc(100 << 10);
  REQUIRE(kept && span && third, "malloc");
  kept[0] = span[0] = third[0] = 1; /* used, so the compiler keeps the calls */
  free(kept);
  free(span);
  m0 = madvises() + unmaps();
  free_keeps_errno("span", third);
  /* Its pages are returned, or its segment with them. */
  CHECK(madvises() + unmaps() > m0, "span free did not decommit");

  /* Large blocks: into the cache, then (no cache) buried: decommitted,
   * its address kept until the next such free (large.c). */
  void *l1 = malloc(4 << 20);
  free_keeps_errno("large, cached", l1);
  vg_option_set(OPT_large_cache, 0);
  unsigned long u0 = madvises() + unmaps();
  free_keeps_errno("large, not cached", malloc(5 << 20));
  CHECK(madvises() + unmaps() > u0, "large free made no syscall");

  /* A wholly free segment is unmapped on trim; realloc(p, 0) is a free. */
  void *r = malloc(1000);
  errno = SENTINEL;
  CHECK(realloc(r, 0) == NULL && errno == SENTINEL, "realloc(p, 0): errno %d", errno);
  u0 = unmaps();
  errno = SENTINEL;
  malloc_trim(0);
  CHECK(errno == SENTINEL, "malloc_trim: errno %d", errno);

  /* A large grow whose mremap the kernel refuses falls back to
   * allocate-copy-free and succeeds: errno must not keep the refusal
   * (found on i686 under QEMU, where mremap of 1.7 GiB fails). */
  vg_option_set(OPT_large_cache, 32 << 20);
  unsigned char *g = malloc(2 << 20);
  REQUIRE(g, "malloc");
  g[0] = 3;
  store_relaxed(&vg_os_fail_for_test, VG_FAIL_REMAP);
  errno = SENTINEL;
  unsigned char *g2 = realloc(g, 3 << 20);
  CHECK(g2 != NULL && errno == SENTINEL, "large grow after a refused mremap: %p, errno %d", (void *)g2, errno);
  if (g2) {
    CHECK(g2[0] == 3, "contents lost by the copy");
    free(g2);
  }

  store_relaxed(&vg_os_fail_for_test, 0);
  return test_done("seed_errno");
}
