/* Remote-free stress for ThreadSanitizer (tests/tsan_remote.sh; seed 002).
 *
 *   tsan_stress remote [producers-per-pair [blocks-per-producer]]
 *   tsan_stress publish
 *
 * remote: four producer/consumer pairs pass blocks of 16..2048 bytes through
 * single-producer single-consumer rings, so nearly every free is a remote
 * free (consumers never allocate, so they own no heap).  Each pair's
 * producer is a chain of short-lived threads: a producer exits right after
 * its last push, while its blocks still sit in the ring or in the
 * consumer's hold buffer, so they are freed after the heap was abandoned
 * (and often after the heap struct was reused by the next producer).  A
 * monitor thread calls vigil_malloc_trim and vigil_mallinfo2 meanwhile.
 * Every block carries a pattern checked before it is freed; at the end no
 * byte may still count as used.
 *
 * The rings give producer -> consumer ordering only (release store of a
 * slot, acquire load).  The consumer hands a slot back with a relaxed store
 * and the producer polls it relaxed, so the test adds no happens-before edge
 * from a consumer's free to the producer's reuse of the block: the only one
 * is vigil's remote list.  (An edge back, as a mutex queue adds, could order
 * some frees before the reuse and hide a missing order from TSan.)
 *
 * Before the monitor starts, warm-up threads (created and joined one by one)
 * make every arena, so this mode tests the remote path, not arena creation.
 *
 * publish: the other order, made deterministic: a thread's first malloc
 * creates an arena, and only then (told by a relaxed flag, so with no
 * happens-before edge) another thread calls vigil_mallinfo2 and
 * vigil_malloc_trim, which walk the arena table.  Clean only if vigil
 * publishes new arenas with release/acquire.
 *
 * Build with src's .c files, -DVIGIL_PREFIX, include path src.
 * Exit 0 clean, 1 on a bad block or a lost byte, 2 on a usage or setup error. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vigil.h"

#define PAIRS 4
#define RING 128 /* slots per pair */
#define HOLD 32  /* blocks a consumer keeps before freeing one at random */
#define MIN_SIZE 16
#define MAX_SIZE 2048

static unsigned gens = 12;      /* producer threads per pair, one after another */
static unsigned per_gen = 1500; /* blocks each producer sends */

struct pair {
  _Atomic(unsigned char *) ring[RING];
  _Atomic int done; /* the last producer has been joined */
  unsigned index;
  unsigned long received;
};
static struct pair pairs[PAIRS];
static _Atomic int stop_monitor;
static _Atomic unsigned long bad_blocks, sent_total;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Block layout: uint32 size, uint32 tag, then pattern bytes. */
static unsigned char pat(uint32_t tag, size_t i) { return (unsigned char)(tag * 131u + i * 7u + (i >> 8)); }

static void fill(unsigned char *p, uint32_t size, uint32_t tag) {
  memcpy(p, &size, 4);
  memcpy(p + 4, &tag, 4);
  for (size_t i = 8; i < size; i++) p[i] = pat(tag, i);
}

static int check(const unsigned char *p, const char *who) {
  uint32_t size, tag;
  memcpy(&size, p, 4);
  memcpy(&tag, p + 4, 4);
  if (size < MIN_SIZE || size > MAX_SIZE) {
    fprintf(stderr, "%s: block %p: bad size field %u\n", who, (const void *)p, size);
    return 0;
  }
  for (size_t i = 8; i < size; i++)
    if (p[i] != pat(tag, i)) {
      fprintf(stderr, "%s: block %p (size %u tag %u): byte %zu is %#x, expected %#x\n", who, (const void *)p,
              size, tag, i, p[i], pat(tag, i));
      return 0;
    }
  return 1;
}

struct producer_arg {
  struct pair *pr;
  unsigned gen;
  unsigned *slot; /* next ring slot, carried from one producer to the next */
};

static void *producer(void *arg) {
  struct producer_arg *a = arg;
  struct pair *pr = a->pr;
  uint64_t s = 0x9E3779B97F4A7C15ull ^ ((uint64_t)pr->index << 32 | (a->gen + 1));
  for (unsigned k = 0; k < per_gen; k++) {
    uint32_t size = (uint32_t)(MIN_SIZE + rnd(&s) % (MAX_SIZE - MIN_SIZE + 1));
    uint32_t tag = (uint32_t)rnd(&s);
    unsigned char *p;
    unsigned r = (unsigned)(rnd(&s) % 32);
    if (r == 0) {
      /* calloc: zeroed, then grown or shrunk by realloc (may move: a local free). */
      uint32_t first = (uint32_t)(MIN_SIZE + rnd(&s) % (MAX_SIZE - MIN_SIZE + 1));
      p = vigil_calloc(1, first);
      if (p == NULL) abort();
      for (uint32_t i = 0; i < first; i++)
        if (p[i] != 0) {
          fprintf(stderr, "producer: calloc(%u) byte %u is %#x\n", first, i, p[i]);
          atomic_fetch_add(&bad_blocks, 1);
          break;
        }
      fill(p, first, tag);
      p = vigil_realloc(p, size);
      if (p == NULL) abort();
      uint32_t keep = first < size ? first : size;
      for (size_t i = 8; i < keep; i++)
        if (p[i] != pat(tag, i)) {
          fprintf(stderr, "producer: realloc lost byte %zu\n", i);
          atomic_fetch_add(&bad_blocks, 1);
          break;
        }
    } else {
      p = vigil_malloc(size);
      if (p == NULL) abort();
    }
    if (r == 1 || r == 2) {
      /* Some local traffic: allocate and free on this thread. */
      size_t n = MIN_SIZE + rnd(&s) % (MAX_SIZE - MIN_SIZE + 1);
      void *t = vigil_malloc(n);
      if (t == NULL) abort();
      memset(t, 0x5a, n);
      vigil_free(t);
    }
    fill(p, size, tag);
    _Atomic(unsigned char *) *slot = &pr->ring[*a->slot % RING];
    while (atomic_load_explicit(slot, memory_order_relaxed) != NULL) sched_yield();
    atomic_store_explicit(slot, p, memory_order_release);
    (*a->slot)++;
  }
  atomic_fetch_add_explicit(&sent_total, per_gen, memory_order_relaxed);
  return NULL; /* exits with blocks in flight: its heap is abandoned */
}

static void *driver(void *arg) {
  struct pair *pr = arg;
  unsigned slot = 0;
  for (unsigned g = 0; g < gens; g++) {
    struct producer_arg a = {pr, g, &slot};
    pthread_t t;
    if (pthread_create(&t, NULL, producer, &a) != 0) abort();
    pthread_join(t, NULL);
  }
  atomic_store_explicit(&pr->done, 1, memory_order_release);
  return NULL;
}

static void *consumer(void *arg) {
  struct pair *pr = arg;
  unsigned char *hold[HOLD];
  unsigned held = 0, next = 0;
  uint64_t s = 0xD1B54A32D192ED03ull ^ pr->index;
  char who[32];
  snprintf(who, sizeof who, "consumer %u", pr->index);
  for (;;) {
    _Atomic(unsigned char *) *slot = &pr->ring[next % RING];
    unsigned char *p = atomic_load_explicit(slot, memory_order_acquire);
    if (p == NULL) {
      if (atomic_load_explicit(&pr->done, memory_order_acquire) &&
          atomic_load_explicit(slot, memory_order_acquire) == NULL)
        break;
      sched_yield();
      continue;
    }
    /* Hand the slot back before touching the block (relaxed: no edge back). */
    atomic_store_explicit(slot, NULL, memory_order_relaxed);
    next++;
    pr->received++;
    if (!check(p, who)) atomic_fetch_add(&bad_blocks, 1);
    if (held < HOLD) {
      hold[held++] = p;
      continue;
    }
    unsigned i = (unsigned)(rnd(&s) % HOLD);
    if (!check(hold[i], who)) atomic_fetch_add(&bad_blocks, 1);
    vigil_free(hold[i]); /* remote: the owner may have exited long ago */
    hold[i] = p;
  }
  for (unsigned i = 0; i < held; i++) {
    if (!check(hold[i], who)) atomic_fetch_add(&bad_blocks, 1);
    vigil_free(hold[i]);
  }
  return NULL;
}

static void *monitor(void *arg) {
  (void)arg;
  struct timespec ts = {0, 2 * 1000 * 1000};
  unsigned n = 0;
  while (!atomic_load_explicit(&stop_monitor, memory_order_relaxed)) {
    struct mallinfo2 m = vigil_mallinfo2();
    if (m.uordblks > ((size_t)1 << 32)) {
      fprintf(stderr, "monitor: absurd uordblks %zu\n", m.uordblks);
      atomic_fetch_add(&bad_blocks, 1);
    }
    if (++n % 5 == 0) vigil_malloc_trim(0);
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* Arenas: what vigil_malloc_info says ("count" to be made, "created"). */
static void arena_numbers(unsigned *count, unsigned *created) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len); /* glibc's malloc: vigil is prefixed */
  if (f == NULL || vigil_malloc_info(0, f) != 0) abort();
  fclose(f);
  const char *a = strstr(buf, "<vigil-arenas ");
  if (a == NULL || sscanf(a, "<vigil-arenas count=\"%u\" created=\"%u\"", count, created) != 2) abort();
  free(buf);
}

static void *touch(void *arg) {
  vigil_free(vigil_malloc(64));
  return arg;
}

static int run_remote(void) {
  /* Warm-up: every arena exists, made by threads this one joined. */
  unsigned count, created, tries = 0;
  for (arena_numbers(&count, &created); created < count; arena_numbers(&count, &created)) {
    pthread_t t;
    if (++tries > 2 * count + 8 || pthread_create(&t, NULL, touch, NULL) != 0) return 2;
    pthread_join(t, NULL);
  }
  pthread_t drv[PAIRS], con[PAIRS], mon;
  if (pthread_create(&mon, NULL, monitor, NULL) != 0) return 2;
  for (unsigned i = 0; i < PAIRS; i++) {
    pairs[i].index = i;
    if (pthread_create(&con[i], NULL, consumer, &pairs[i]) != 0) return 2;
    if (pthread_create(&drv[i], NULL, driver, &pairs[i]) != 0) return 2;
  }
  unsigned long received = 0;
  for (unsigned i = 0; i < PAIRS; i++) {
    pthread_join(drv[i], NULL);
    pthread_join(con[i], NULL);
    received += pairs[i].received;
  }
  atomic_store(&stop_monitor, 1);
  pthread_join(mon, NULL);
  vigil_malloc_trim(0);
  struct mallinfo2 m = vigil_mallinfo2();
  unsigned long sent = atomic_load(&sent_total), bad = atomic_load(&bad_blocks);
  printf("tsan_stress remote: %u arenas, %u pairs x %u producers x %u blocks: sent %lu, received %lu, bad %lu, "
         "in use at end %zu bytes\n",
         count, PAIRS, gens, per_gen, sent, received, bad, m.uordblks + m.hblkhd);
  if (sent != received || bad != 0 || m.uordblks + m.hblkhd != 0) {
    fprintf(stderr, "tsan_stress: FAILED\n");
    return 1;
  }
  return 0;
}

static _Atomic int allocated, inspected;

static void *first_malloc(void *arg) {
  void *p = vigil_malloc(64); /* this thread's heap, and an arena, are made here */
  if (p == NULL) abort();
  atomic_fetch_add_explicit(&allocated, 1, memory_order_relaxed);
  while (!atomic_load_explicit(&inspected, memory_order_relaxed)) sched_yield();
  vigil_free(p);
  return arg;
}

static void *inspector(void *arg) {
  while (atomic_load_explicit(&allocated, memory_order_relaxed) < 2) sched_yield();
  struct mallinfo2 m = vigil_mallinfo2();
  vigil_malloc_trim(0);
  atomic_store_explicit(&inspected, 1, memory_order_relaxed);
  printf("tsan_stress publish: mallinfo2 saw %zu bytes in use\n", m.uordblks);
  return arg;
}

static int run_publish(void) {
  pthread_t ins, t[2];
  if (pthread_create(&ins, NULL, inspector, NULL) != 0) return 2;
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, first_malloc, NULL) != 0) return 2;
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_join(ins, NULL);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "publish") == 0) return run_publish();
  if (argc < 2 || strcmp(argv[1], "remote") != 0) {
    fprintf(stderr, "usage: %s remote [producers-per-pair [blocks-per-producer]] | publish\n", argv[0]);
    return 2;
  }
  if (argc > 2) gens = (unsigned)strtoul(argv[2], NULL, 10);
  if (argc > 3) per_gen = (unsigned)strtoul(argv[3], NULL, 10);
  return run_remote();
}
