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
 * Signals are blocked while any allocator lock is held (arena.c), so a
 * handler that forks never finds its own thread inside a critical section.
 * If it interrupted a fast path (no lock), vg_tl_busy says so and the child
 * gets a fresh heap instead of the half-updated one. */
#include "internal.h"

/* glibc exports these (GLIBC_2.2.5): the recursive lock on the list of open
 * FILEs that fflush(NULL) and fork() take. */
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

static unsigned locked_arenas;

static void prepare(void) {
  if (!load_acquire(&vg_ready)) return;
  _IO_list_lock();
  /* Raise the gate only now: a thread waiting at it may hold a FILE lock
   * that fflush(NULL) needs before it releases the list lock. */
  vg_tl_forking = 1;
  atomic_fetch_add_explicit(&vg_fork_gate, 1, memory_order_relaxed);
  vg_lock(&vg_heap_pool_lock);
  locked_arenas = load_relaxed(&vg_narenas);
  for (unsigned i = 0; i < locked_arenas; i++)
    if (vg_arena_at(i)) vg_lock(&vg_arena_at(i)->lock);
  vg_lock(&vg_large_lock);
  vg_lock(&vg_meta_lock);
}

static void parent(void) {
  if (!load_acquire(&vg_ready)) return;
  vg_unlock(&vg_meta_lock);
  vg_unlock(&vg_large_lock);
  for (unsigned i = locked_arenas; i-- > 0;)
    if (vg_arena_at(i)) vg_unlock(&vg_arena_at(i)->lock);
  vg_unlock(&vg_heap_pool_lock);
  _IO_list_unlock();
  atomic_fetch_sub_explicit(&vg_fork_gate, 1, memory_order_release);
  vg_tl_forking = 0;
}

static void child(void) {
  if (!load_acquire(&vg_ready)) return;
  /* Every lock was taken by this thread in prepare(); the structures they
   * guard are consistent.  Re-initialise rather than unlock: the mutexes'
   * owner was the parent's thread. */
  vg_lock_reinit_held(&vg_meta_lock);
  vg_lock_reinit_held(&vg_large_lock);
  for (unsigned i = locked_arenas; i-- > 0;)
    if (vg_arena_at(i)) vg_lock_reinit_held(&vg_arena_at(i)->lock);
  vg_lock_reinit_held(&vg_heap_pool_lock);
  store_relaxed(&vg_fork_gate, 0); /* the other forkers are not in this process */
  vg_tl_forking = 0;
  /* The other threads' heaps may be mid-update and their threads are gone:
   * they are orphaned (kept, never reused).  So is this thread's heap if the
   * fork came from a signal handler that interrupted vigil. */
  for (struct heap *h = vg_all_heaps; h; h = h->next_all)
    if (load_relaxed(&h->state) == HEAP_LIVE && (h != vg_tl_heap || vg_tl_busy))
      store_relaxed(&h->state, HEAP_ORPHANED);
  if (vg_tl_busy) vg_tl_heap = NULL;
}

void vg_fork_register(void) { pthread_atfork(prepare, parent, child); }
