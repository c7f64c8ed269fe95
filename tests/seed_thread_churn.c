/* Seed 000: glibc's arena reference counts raced between reused_arena and
 * get_free_list on thread exit.  vigil's thread exit hands the heap's pages
 * back (owner NULL, under the arena lock), closes its remote-free stack, and
 * only then returns the heap to the pool for reuse.
 *
 * Threads are created and ended continuously; each frees blocks that threads
 * of the previous waves allocated (their owners are gone or going), and
 * leaves blocks for the next waves.  Checked: every block keeps its
 * contents, nothing is lost (in-use bytes return to zero), and heaps are
 * reused rather than accumulated. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "testlib.h"

#define WAVES 300
#define PER_WAVE 4
#define POOL 4096
#define BLOCKS 200

struct blk {
  unsigned char *p;
  size_t n;
};
static struct blk pool[POOL];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int bad;

static int intact(const struct blk *b) {
  unsigned char tag = (unsigned char)(b->n * 31);
  for (size_t i = 0; i < b->n; i++)
    if (b->p[i] != tag) return 0;
  return 1;
}

static void *worker(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg;
  struct blk mine[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    s = s * 1103515245u + 12345u;
    size_t n = 1 + (s >> 8) % ((s >> 24) % 8 == 0 ? 20000 : 700);
    mine[i].p = malloc(n);
    mine[i].n = n;
    if (!mine[i].p) { bad = 1; return NULL; }
    memset(mine[i].p, (unsigned char)(n * 31), n);
  }
  /* Swap half of them into the shared pool: what comes out was allocated by
   * earlier threads, most of which have exited. */
  for (int i = 0; i < BLOCKS; i += 2) {
    s = s * 1103515245u + 12345u;
    pthread_mutex_lock(&pool_lock);
    struct blk old = pool[(s >> 8) % POOL];
    pool[(s >> 8) % POOL] = mine[i];
    pthread_mutex_unlock(&pool_lock);
    mine[i] = old;
  }
  for (int i = 0; i < BLOCKS; i++) {
    if (!mine[i].p) continue;
    if (!intact(&mine[i])) {
      bad = 1;
      fprintf(stderr, "block %p (%zu bytes) corrupted\n", (void *)mine[i].p, mine[i].n);
    }
    free(mine[i].p);
  }
  return NULL;
}

static size_t count_heaps(void) {
  size_t n = 0;
  vg_lock(&vg_heap_pool_lock);
  for (struct heap *h = vg_all_heaps; h; h = h->next_all) n++;
  vg_unlock(&vg_heap_pool_lock);
  return n;
}

static void *idle(void *arg) { return arg; }

int main(void) {
  /* Let libc make what it keeps for good (stdout's buffer, the thread
   * stack cache's bookkeeping) before the baseline is taken. */
  printf("%d waves of %d threads\n", WAVES, PER_WAVE);
  pthread_t w[PER_WAVE];
  for (int i = 0; i < PER_WAVE; i++) pthread_create(&w[i], NULL, idle, NULL);
  for (int i = 0; i < PER_WAVE; i++) pthread_join(w[i], NULL);
  size_t base = mallinfo2().uordblks;
  for (int w = 0; w < WAVES && !bad; w++) {
    pthread_t t[PER_WAVE];
    for (int i = 0; i < PER_WAVE; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(w * PER_WAVE + i + 1));
    /* Join only half at once, so exits overlap the next wave's frees. */
    for (int i = 0; i < PER_WAVE; i++) pthread_join(t[i], NULL);
  }
  for (int i = 0; i < POOL; i++)
    if (pool[i].p) {
      CHECK(intact(&pool[i]), "pooled block %d corrupted", i);
      free(pool[i].p);
    }
  CHECK(!bad, "worker saw corruption");
  size_t heaps = count_heaps();
  printf("%d threads ran; %zu heaps were ever made\n", WAVES * PER_WAVE, heaps);
  CHECK(heaps <= PER_WAVE + 2, "%zu heaps for %d concurrent threads: exited heaps are not reused", heaps, PER_WAVE);
  size_t now = mallinfo2().uordblks;
  CHECK(now == base, "in-use bytes %zu after freeing everything (started at %zu): blocks were lost", now, base);
  return test_done("seed_thread_churn");
}
