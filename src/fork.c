/* fork() support, and the lock order every path in vigil follows.
 *
 * Lock order (take left before right, never the reverse):
 *
 *   stdio list lock -> heap pool lock -> arena[0] -> ... -> arena[n-1]
 *     -> large lock -> meta lock
 *
 * Seed 000: pthread_atfork prepare handlers run *before* glibc's fork()
 * takes the stdio list lock.  An allocator that just locks everything in its
 * prepare handler deadlocks against a thread in fflush(NULL) (list lock ->
 * FILE lock) and one in getdelim (FILE lock -> malloc).  So the prepare
 * handler takes the stdio list lock itself, first.  It is recursive, so
 * glibc's fork() then takes it again without blocking; glibc unlocks it once
 * in the parent before our parent handler runs, and resets it in the child.
 *
 * Fork from a signal handler.  Signals are not masked around allocator
 * locks (that cost two rt_sigprocmask per lock), so the handler may have
 * interrupted its own thread inside a critical section.  Each lock word
 * names its owner, so prepare() sees which locks its own thread already
 * holds and skips them (lock.c explains why that cannot deadlock); parent()
 * and child() leave them to the interrupted code, which releases them when
 * the handler returns.  In the child the state behind such a lock is
 * mid-update: a heap made there never attaches to such an arena (arena.c),
 * and taking such a lock again aborts with "allocator re-entered from a
 * signal handler" instead of hanging.  If the handler interrupted a fast
 * path (no lock), vg_tl_busy says so and the child gets a fresh heap
 * instead of the half-updated one. */
#include "internal.h"

/* glibc exports these (GLIBC_2.2.5): the recursive lock on the list of open
 * FILEs that fflush(NULL) and fork() take. */
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

static unsigned locked_arenas;
/* The locks prepare() found already held by its own thread: at most the
 * pool lock with the meta lock, or one arena lock, or the large lock. */
#define KEPT_MAX 4
static struct vg_lock *kept[KEPT_MAX];
static unsigned nkept;

static bool was_kept(struct vg_lock *l) {
  for (unsigned i = 0; i < nkept; i++)
    if (kept[i] == l) return true;
  return false;
}

static void take(struct vg_lock *l) {
  if (vg_lock_mine(l)) {
    if (nkept == KEPT_MAX) vg_fatal(V_LOCK_REENTERED, l);
    kept[nkept++] = l;
  } else {
    vg_lock(l);
  }
}

/* Every lock in the documented order, as `fn` (the reverse when unwinding
 * does not matter: none of these block). */
static void each_lock(void (*fn)(struct vg_lock *)) {
  fn(&vg_heap_pool_lock);
  for (unsigned i = 0; i < locked_arenas; i++)
    if (vg_arena_at(i)) fn(&vg_arena_at(i)->lock);
  fn(&vg_large_lock);
  fn(&vg_meta_lock);
}

static void release_parent(struct vg_lock *l) {
  if (!was_kept(l)) vg_unlock(l);
}
static void release_child(struct vg_lock *l) {
  if (!was_kept(l)) vg_lock_reset_child(l);
}

/* Memcheck reports nothing vigil does from prepare to parent or child
 * (annotate.h). */
static void prepare(void) {
  if (!load_acquire(&vg_ready)) return;
  vg_ann_enter();
  _IO_list_lock();
  /* Raise the gate only now: a thread waiting at it may hold a FILE lock
   * that fflush(NULL) needs before it releases the list lock. */
  vg_tl_forking = 1;
  atomic_fetch_add_explicit(&vg_fork_gate, 1, memory_order_relaxed);
  nkept = 0;
  /* The pool lock first: arenas are only created under it, so the count
   * read after it is every arena there is. */
  take(&vg_heap_pool_lock);
  locked_arenas = load_relaxed(&vg_narenas);
  for (unsigned i = 0; i < locked_arenas; i++)
    if (vg_arena_at(i)) take(&vg_arena_at(i)->lock);
  take(&vg_large_lock);
  take(&vg_meta_lock);
}

static void parent(void) {
  if (!load_acquire(&vg_ready)) return;
  each_lock(release_parent);
  _IO_list_unlock();
  atomic_fetch_sub_explicit(&vg_fork_gate, 1, memory_order_release);
  vg_tl_forking = 0;
  vg_ann_leave();
}

static void child(void) {
  if (!load_acquire(&vg_ready)) return;
  /* Every lock prepare() took is free again; the structures they guard are
   * consistent. */
  each_lock(release_child);
  store_relaxed(&vg_fork_gate, 0); /* the other forkers are not in this process */
  vg_tl_forking = 0;
  /* The other threads' heaps may be mid-update and their threads are gone:
   * they are orphaned (kept, never reused).  So is this thread's heap if the
   * fork came from a signal handler that interrupted vigil (in a fast path,
   * or holding a lock: its heap's arena may be the one mid-update). */
  bool interrupted = vg_tl_busy || nkept > 0;
  for (struct heap *h = vg_all_heaps; h; h = h->next_all)
    if (load_relaxed(&h->state) == HEAP_LIVE && (h != vg_tl_heap || interrupted))
      store_relaxed(&h->state, HEAP_ORPHANED);
  if (interrupted) vg_tl_heap = NULL;
  vg_ann_leave();
}

void vg_fork_register(void) { pthread_atfork(prepare, parent, child); }
