/* Large blocks: each in its own mapping between two guard pages, found
 * through a hash table (never through in-band headers), with a small cache of
 * freed mappings and glibc's self-adjusting mmap threshold.  They never enter
 * a thread heap (seed 003).  Syscalls run outside the lock. */
#include <errno.h>

#include "internal.h"

#define CACHE_SLOTS 64u
#define LATE_REUSE 4u
#define PROBE_ABOVE ((size_t)1 << 30) /* above: map RW, so the kernel refuses at once */
#define THRESHOLD_MAX ((size_t)32 << 20)

struct large {
  uintptr_t user; /* 0: empty slot */
  uint8_t *map;
  size_t maplen, ulen;
};

struct vg_lock vg_large_lock = VG_LOCK_INIT;
static struct large *table;
static size_t table_cap, table_count, live_bytes;
static size_t peak_now, peak_before; /* see recent_peak */
static uint64_t peak_since;
static struct large cache[CACHE_SLOTS];
static unsigned ncache;
/* The most a cached mapping can hold (0: empty), read without the lock to
 * skip a lookup that cannot succeed. */
static _Atomic size_t cache_top;

/* Usable bytes a mapping can reach in place: up to its tail guard page. */
static size_t room_of(const struct large *e) {
  return (size_t)(e->map + e->maplen - (uint8_t *)e->user) - vg_os_page_size();
}

/* Caller holds the lock. */
static void cache_changed(void) {
  size_t top = 0;
  for (unsigned i = 0; i < ncache; i++)
    if (room_of(&cache[i]) > top) top = room_of(&cache[i]);
  store_relaxed(&cache_top, top);
}
static size_t cache_bytes;

size_t vg_mmap_threshold(void) { return vg_option(OPT_mmap_threshold); }

/* The addresses of the last FREED_RING large blocks that were freed or
 * moved away by realloc: a second free (or a realloc) of one of them is a
 * double free, not an invalid pointer.  Caller holds the lock. */
#define FREED_RING 64u
static uintptr_t freed_ring[FREED_RING];
static unsigned freed_next;
static void note_gone(uintptr_t user) { freed_ring[freed_next++ % FREED_RING] = user; }

bool vg_large_was_freed(const void *p) {
  bool hit = false;
  vg_lock(&vg_large_lock);
  for (unsigned i = 0; i < FREED_RING && !hit; i++) hit = freed_ring[i] == (uintptr_t)p && p != NULL;
  vg_unlock(&vg_large_lock);
  return hit;
}

static size_t slot_of(uintptr_t user) {
  return (size_t)(((user >> 12) * 0x9E3779B97F4A7C15ull) >> 20) & (table_cap - 1);
}

static struct large *find(uintptr_t user) {
  if (table_cap == 0) return NULL;
  for (size_t i = slot_of(user);; i = (i + 1) & (table_cap - 1)) {
    if (table[i].user == user) return &table[i];
    if (table[i].user == 0) return NULL;
  }
}

static void put(struct large e) {
  size_t i = slot_of(e.user);
  while (table[i].user != 0) i = (i + 1) & (table_cap - 1);
  table[i] = e;
  table_count++;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void remove_entry(struct large *e) {
  size_t i = (size_t)(e - table), j = i;
  table[i].user = 0;
  table_count--;
  for (;;) {
    j = (j + 1) & (table_cap - 1);
    if (table[j].user == 0) return;
    size_t home = slot_of(table[j].user);
    bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
    if (movable) {
      table[i] = table[j];
      table[j].user = 0;
      i = j;
    }
  }
}

/* Caller holds the lock.  Grows the table so one more entry fits. */
static bool reserve_one(void) {
  if ((table_count + 1) * 2 <= table_cap) return true;
  size_t ncap = table_cap ? table_cap * 2 : 1024;
  struct large *old = table, *nt = vg_os_map(NULL, ncap * sizeof *nt, 1);
  if (nt == NULL) return false;
  size_t ocap = table_cap;
  table = nt;
  table_cap = ncap;
  table_count = 0;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].user) put(old[i]);
  if (old) vg_os_unmap(old, ocap * sizeof *old);
  return true;
}

/* After live_bytes grew: the period's peak follows it (see recent_peak). */
static void live_grew(void) {
  if (peak_now < live_bytes) peak_now = live_bytes;
}

static bool publish(struct large e) {
  vg_lock(&vg_large_lock);
  bool ok = reserve_one();
  if (ok) {
    put(e);
    live_bytes += e.ulen;
    live_grew();
  }
  vg_unlock(&vg_large_lock);
  return ok;
}

/* The cached mapping that fits ulen best: one whose reservation holds it
 * and that is at most four times as big, used as it is (its usable size is what
 * it was), or grown into its headroom with one mprotect: cheaper than a new
 * mapping and its page faults. */
static bool cache_take(size_t ulen, struct large *out) {
  vg_lock(&vg_large_lock);
  int best = -1;
  size_t best_off = SIZE_MAX;
  /* The newest stays (the LATE_REUSE newest at harden >= 1): a block
   * freed is not the next one handed out, so a second free of it is a
   * double free. */
  unsigned late = harden_level() ? LATE_REUSE : 1;
  unsigned n = ncache > late ? ncache - late : 0;
  for (unsigned i = 0; i < n; i++) {
    struct large *c = &cache[i];
    if (room_of(c) < ulen || c->ulen / 4 > ulen) continue;
    size_t off = c->ulen > ulen ? c->ulen - ulen : ulen - c->ulen;
    if (off < best_off) best = (int)i, best_off = off;
  }
  if (best < 0) {
    vg_unlock(&vg_large_lock);
    return false;
  }
  struct large e = cache[best];
  memmove(&cache[best], &cache[best + 1], (--ncache - (unsigned)best) * sizeof cache[0]); /* oldest first */
  cache_bytes -= e.ulen;
  cache_changed();
  vg_unlock(&vg_large_lock);
  uint8_t *user = (uint8_t *)e.user;
  if (e.ulen < ulen) {
    if (vg_os_protect(user + e.ulen, ulen - e.ulen, 1) != 0) {
      vg_os_unmap(e.map, e.maplen);
      return false;
    }
    e.ulen = ulen;
  }
  *out = e;
  return true;
}

/* A cached mapping for size, or NULL when none fits. */
static void *from_cache(size_t size, bool zero) {
  size_t ps = vg_os_page_size(), ulen = align_up(size ? size : 1, ps);
  struct large e;
  if (load_relaxed(&cache_top) < ulen || !cache_take(ulen, &e)) return NULL;
  int saved = errno;
  if (!publish(e)) {
    vg_os_unmap(e.map, e.maplen);
    errno = saved;
    return NULL;
  }
  /* Fresh zero pages for calloc: cheaper than writing every byte (and
   * memset on failure). */
  if (zero && vg_os_zero((void *)e.user, e.ulen) != 0) {
    vg_ann_writable((void *)e.user, size);
    memset((void *)e.user, 0, size);
  }
  errno = saved;
  return (void *)e.user;
}

/* The room a new block reserves: its size rounded up to a quarter of its
 * power of two (at most a quarter more address space; PROT_NONE, so none of
 * it is resident).  A freed mapping in the cache then serves every later
 * request of its class with at most one mprotect: without the room, churn
 * of blocks between the largest span and 4 MiB missed the cache on most
 * requests and mapped (and faulted in) a new block each time. */
static size_t class_room(size_t ulen) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)ulen); /* ulen >= a page */
  size_t step = (size_t)1 << (lg - 2);
  return align_up(ulen, step > vg_os_page_size() ? step : vg_os_page_size());
}

void *vg_large_alloc(size_t size, size_t align, bool zero) {
  size_t ps = vg_os_page_size();
  if (size > PTRDIFF_MAX - 4 * ps || align > PTRDIFF_MAX / 2) {
    errno = ENOMEM;
    return NULL;
  }
  size_t ulen = align_up(size ? size : 1, ps);
  if (align <= ps) {
    void *p = from_cache(size, zero);
    if (p != NULL) return p;
  }
  size_t slack = align > ps ? align - ps : 0;
  /* The room is mapped RW and then protected, not reserved PROT_NONE and
   * NORESERVE: so it is charged like the block, and neither the cache's
   * mprotect nor an mremap can grow a block past the kernel's commit check.
   * Above 1 GiB the block gets no room: the kernel refuses a size it cannot
   * commit at once, and a quarter more could make it refuse one it can. */
  size_t maplen = (ulen <= PROBE_ABOVE ? class_room(ulen) : ulen) + 2 * ps + slack;
  uint8_t *map = vg_os_map(NULL, maplen, 1);
  if (map == NULL) return NULL;
  uint8_t *user = (uint8_t *)align_up((uintptr_t)map + ps, align > ps ? align : ps);
  vg_os_protect(map, (size_t)(user - map), 0);
  vg_os_protect(user + ulen, (size_t)(map + maplen - (user + ulen)), 0);
  struct large e = {(uintptr_t)user, map, maplen, ulen};
  if (!publish(e)) {
    vg_os_unmap(map, maplen);
    errno = ENOMEM;
    return NULL;
  }
  return user;
}

/* glibc's dynamic threshold: freeing a mapped block larger than the
 * threshold (up to 32 MiB) raises it to that size and the trim threshold to
 * twice that, so alloc/free loops stop mapping and unmapping. */
static void adjust_thresholds(size_t ulen) {
  if (load_relaxed(&vg_opt_thresholds_fixed)) return;
  if (ulen > vg_mmap_threshold() && ulen <= THRESHOLD_MAX) {
    store_relaxed(&vg_opt_value[OPT_mmap_threshold], ulen);
    store_relaxed(&vg_opt_value[OPT_trim_threshold], 2 * ulen);
    VG_PROBE2(threshold, ulen, 2 * ulen);
  }
}

/* The peak of live_bytes in this decay period and in the one before, so
 * the limit follows the working set's recent high, not its current level:
 * with the current level, every dip evicted (unmapped) mappings that the
 * next rise mapped and faulted in again (medium-churn, 2 threads: a miss
 * every 20 large mallocs).  Caller holds the lock. */
static size_t recent_peak(void) {
  uint64_t now = vg_os_now_ns(), period = (uint64_t)vg_option(OPT_decay_ms) * 1000000u;
  if (now - peak_since >= period) {
    peak_before = now - peak_since >= 2 * period ? 0 : peak_now;
    peak_now = 0;
    peak_since = now;
  }
  live_grew();
  return peak_now > peak_before ? peak_now : peak_before;
}

/* Bytes of freed mappings kept: the tunable, or, while the thresholds
 * adjust themselves, twice the mmap threshold or twice the recent peak of
 * live large bytes when that is more.  Once frees have raised the threshold to a block size,
 * glibc serves blocks up to it from its heap and keeps its free chunks; the
 * cache is vigil's counterpart for blocks too big for a segment.  With only
 * the live bytes as budget, churn of 4-32 MiB blocks evicted (and so
 * unmapped, and faulted in again) a mapping every 50 frees. */
static size_t cache_limit(void) {
  size_t limit = vg_option(OPT_large_cache), t = vg_mmap_threshold();
  if (!load_relaxed(&vg_opt_thresholds_fixed)) {
    size_t peak = recent_peak();
    if (limit < 2 * t) limit = 2 * t;
    if (limit / 2 < peak) limit = 2 * peak;
  }
  return limit;
}

/* At harden >= 2 a freed block is not cached: its pages go at once and its
 * mapping becomes a PROT_NONE reservation (so a use after free faults),
 * kept for the next GRAVE_SLOTS large frees before it is unmapped (so its
 * address is not handed straight back: a second free of it stays a double
 * free, not a free of somebody else's new block).  Below harden = 2 only a
 * mapping the cache does not keep is buried, until the next one is: the
 * kernel would hand its address to the next mmap of that size. */
#define GRAVE_SLOTS 16u
static struct large grave[GRAVE_SLOTS];
static unsigned grave_next;

static void bury(struct large e) {
  vg_os_decommit(e.map, e.maplen, 1); /* still ours: nobody can map there */
  unsigned slots = harden_level() >= HARDEN_QUARANTINE ? GRAVE_SLOTS : 1;
  vg_lock(&vg_large_lock);
  struct large old = grave[grave_next % slots];
  grave[grave_next++ % slots] = e;
  vg_unlock(&vg_large_lock);
  if (old.map != NULL) vg_os_unmap(old.map, old.maplen);
}

bool vg_large_free(void *p) {
  struct large evict[CACHE_SLOTS]; /* the loop below empties the cache at most */
  unsigned nevict = 0;
  vg_lock(&vg_large_lock);
  struct large *f = find((uintptr_t)p);
  if (f == NULL) {
    vg_unlock(&vg_large_lock);
    return false;
  }
  struct large e = *f;
  remove_entry(f);
  note_gone(e.user);
  live_bytes -= e.ulen;
  adjust_thresholds(e.ulen);
  if (harden_level() >= HARDEN_QUARANTINE) {
    vg_unlock(&vg_large_lock);
    bury(e);
    return true;
  }
  size_t limit = cache_limit();
  bool cached = e.user == (uintptr_t)e.map + vg_os_page_size() && e.ulen <= limit;
  if (cached) {
    while (ncache == CACHE_SLOTS || cache_bytes + e.ulen > limit) {
      evict[nevict++] = cache[0];
      cache_bytes -= cache[0].ulen;
      memmove(&cache[0], &cache[1], --ncache * sizeof cache[0]);
    }
    vg_ann_cached((void *)e.user, e.ulen);
    cache[ncache++] = e;
    cache_bytes += e.ulen;
    cache_changed();
  }
  vg_unlock(&vg_large_lock);
  for (unsigned i = 0; i < nevict; i++) vg_os_unmap(evict[i].map, evict[i].maplen);
  if (!cached) bury(e);
  return true;
}

size_t vg_large_usable(const void *p) {
  vg_lock(&vg_large_lock);
  struct large *e = find((uintptr_t)p);
  size_t n = e ? e->ulen : 0;
  vg_unlock(&vg_large_lock);
  return n;
}

/* Resize in place where the reservation allows, else move the pages.
 *
 * A block's mapping is [guard][RW: ulen][PROT_NONE: headroom and guard].
 * Shrinking decommits the tail, which becomes headroom (one syscall).
 * Growing commits headroom with mprotect (one syscall, and an eighth more
 * than asked, so a block grown in small steps makes a syscall only every
 * few steps).  When the headroom runs out, the pages move (mremap, no copy)
 * into a new reservation four times the new size (twice on 32-bit), so a
 * block grown from 16 B to 256 MiB moves O(log n) times and its page tables are never moved on every
 * step.  Every mremap names its destination (MREMAP_FIXED): under
 * qemu-user -R, a plain MREMAP_MAYMOVE that fails still unmaps the block
 * (qemu-targets/README.md).  Returns NULL, the block intact at p, when the
 * caller should fall back to allocate-copy-free. */
#define HEADROOM (UINTPTR_MAX > 0xffffffffu ? 4u : 2u)

static void *grow_moving(struct large *e, size_t nlen, size_t ps) {
  /* Above 1 GiB, first let the kernel refuse a size it cannot commit: a
   * plain RW mapping is refused at once, where reserving first would map
   * any size PROT_NONE: free natively, but under qemu-user a 31 TiB
   * reservation took 40 s and 24 GiB of QEMU's page tables
   * (corpus/regressions/api/NOTES). */
  if (nlen > PROBE_ABOVE) {
    void *probe = vg_os_map(NULL, nlen, 1);
    if (probe == NULL) return NULL;
    vg_os_unmap(probe, nlen);
  }
  /* Room for four times the size on 64-bit (a block grown by half each
   * step moves every third step), twice on 32-bit, where address space is
   * short. */
  size_t room = nlen <= PTRDIFF_MAX / HEADROOM ? HEADROOM * nlen : nlen;
  uint8_t *r = vg_os_map(NULL, room + 2 * ps, 0);
  /* Less headroom, but still a fraction of the size, so that moves stay
   * O(log n) until the address space itself runs out (found on i686 and
   * armhf: with just the size reserved, +4 KiB steps moved every step). */
  for (unsigned k = 1; r == NULL && k <= 4; k++) {
    room = nlen + (nlen >> k) > nlen ? align_up(nlen + (nlen >> k), ps) : nlen;
    r = vg_os_map(NULL, room + 2 * ps, 0);
  }
  if (r == NULL) r = vg_os_map(NULL, (room = nlen) + 2 * ps, 0);
  if (r == NULL) return NULL;
  uint8_t *user = r + ps;
  /* Commit the new part first: if the kernel refuses, the block has not
   * moved. */
  if (vg_os_protect(user + e->ulen, nlen - e->ulen, 1) != 0 ||
      vg_os_remap((void *)e->user, e->ulen, e->ulen, user) == NULL) {
    vg_os_unmap(r, room + 2 * ps);
    return NULL;
  }
  /* The old guards, one by one: the range the pages left may already hold
   * another thread's new mapping. */
  uint8_t *old = (uint8_t *)e->user;
  vg_os_unmap(e->map, (size_t)(old - e->map));
  vg_os_unmap(old + e->ulen, (size_t)(e->map + e->maplen - (old + e->ulen)));
  *e = (struct large){(uintptr_t)user, r, room + 2 * ps, nlen};
  return user;
}

void *vg_large_realloc(void *p, size_t size) {
  size_t ps = vg_os_page_size();
  if (size > PTRDIFF_MAX - 4 * ps) return NULL;
  size_t nlen = align_up(size ? size : 1, ps);
  /* The entry leaves the table while the syscalls run: once the pages have
   * moved, another thread may map a new block at the old address, and two
   * entries must never share a key. */
  vg_lock(&vg_large_lock);
  struct large *f = find((uintptr_t)p);
  if (f == NULL) vg_fatal(V_INVALID_POINTER, p); /* api.c checked it: a race with a free */
  struct large e = *f, n = e;
  if (nlen == e.ulen) {
    vg_unlock(&vg_large_lock);
    return p;
  }
  remove_entry(f);
  vg_unlock(&vg_large_lock);
  int saved_errno = errno; /* a refused syscall is not the caller's failure */
  uint8_t *user = (uint8_t *)e.user, *end = e.map + e.maplen;
  void *result = NULL;
  if (nlen < e.ulen) {
    vg_os_decommit(user + nlen, e.ulen - nlen, 1);
    n.ulen = nlen;
    /* Keep headroom no bigger than the block: the address space a shrunk
     * block holds stays within twice its size. */
    uint8_t *keep = user + 2 * nlen + ps;
    if (end > keep) {
      vg_os_unmap(keep, (size_t)(end - keep));
      n.maplen = (size_t)(keep - e.map);
    }
    result = p;
  } else if ((size_t)(end - user) - ps >= nlen) {
    size_t room = (size_t)(end - user) - ps, want = e.ulen + e.ulen / 8;
    size_t c = nlen > want ? nlen : want > room ? room : align_up(want, ps);
    if (vg_os_protect(user + e.ulen, c - e.ulen, 1) == 0) {
      n.ulen = c;
      result = p;
    }
  } else {
    result = grow_moving(&n, nlen, ps);
  }
  vg_lock(&vg_large_lock);
  put(n); /* cannot need to grow: this entry was taken out above */
  if (n.user != e.user) note_gone(e.user);
  live_bytes = live_bytes - e.ulen + n.ulen;
  live_grew();
  vg_unlock(&vg_large_lock);
  if (result) VG_PROBE2(large_remap, e.ulen, n.ulen);
  errno = saved_errno;
  return result;
}

int vg_large_trim(void) {
  struct large evict[CACHE_SLOTS];
  vg_lock(&vg_large_lock);
  unsigned n = ncache;
  memcpy(evict, cache, n * sizeof cache[0]);
  ncache = 0;
  cache_bytes = 0;
  cache_changed();
  vg_unlock(&vg_large_lock);
  for (unsigned i = 0; i < n; i++) vg_os_unmap(evict[i].map, evict[i].maplen);
  return n > 0;
}

void vg_large_stats(struct vg_large_stats *st) {
  vg_lock(&vg_large_lock);
  st->blocks = table_count;
  st->bytes = live_bytes;
  st->cached = ncache;
  st->cached_bytes = cache_bytes;
  vg_unlock(&vg_large_lock);
}
