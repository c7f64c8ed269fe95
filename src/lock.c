/* The allocator's locks: one word each, no system call unless contended.
 *
 * A lock word is 0 when free, else the owning thread's id shifted left by
 * one, with bit 0 set once a waiter may be sleeping on it (a futex, through
 * the OS seam).  Taking a free lock is one CAS and releasing it one
 * exchange: no signal masking, so no rt_sigprocmask per lock as glibc-style
 * "block signals while locked" costs (issue 8).
 *
 * Because the owner is in the word, acquiring and recording ownership are
 * one atomic step, and a signal handler can ask "does my own thread hold
 * this lock?" at any instruction of the thread it interrupted.  fork.c uses
 * that: a handler that forks while its thread holds an allocator lock skips
 * that lock instead of deadlocking on it.
 *
 * Nesting (the only places one allocator lock is taken under another):
 *   heap pool -> meta (heap_new and arena_get allocate metadata).
 * Arena, large and meta locks are otherwise taken alone, and meta only
 * under the pool lock.  So a thread holding lock set H and waiting for a
 * lock never holds a lock that a holder of H's locks waits for, which is
 * why fork's prepare handler may skip the locks its own thread holds. */
#include "internal.h"

#define WAITERS 1u

static _Atomic unsigned next_id;
static __thread unsigned tl_id __attribute__((tls_model("initial-exec")));
static __thread unsigned tl_depth __attribute__((tls_model("initial-exec")));

/* This thread's id, shifted: unique among the threads of the process for
 * its lifetime (a counter, not the kernel's tid, so a fork child's threads
 * never reuse the forking thread's id). */
static ALWAYS_INLINE unsigned self(void) {
  unsigned id = tl_id;
  if (unlikely(id == 0)) {
    id = (atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed) + 1) << 1;
    tl_id = id;
  }
  return id;
}

/* Raised by a thread that is about to fork.  Locks are not fair: without
 * the gate, threads that take an arena lock in a loop can keep the forking
 * thread waiting for a second.  Only a thread holding no allocator lock
 * waits at the gate, so it can never block the fork it waits for. */
_Atomic unsigned vg_fork_gate;
__thread unsigned vg_tl_forking __attribute__((tls_model("initial-exec")));

static NOINLINE void wait_gate(void) {
  while (load_acquire(&vg_fork_gate) != 0) vg_os_yield();
}

static NOINLINE void lock_slow(struct vg_lock *l, unsigned me) {
  unsigned v = load_relaxed(&l->word);
  if ((v & ~WAITERS) == me) vg_fatal(V_LOCK_REENTERED, l);
  for (int spin = 0; spin < 64; spin++) {
    if (v == 0 && atomic_compare_exchange_weak_explicit(&l->word, &v, me, memory_order_acquire,
                                                        memory_order_relaxed))
      return;
    vg_cpu_relax();
    v = load_relaxed(&l->word);
  }
  for (;;) {
    /* Taken after a wait: keep the flag, another waiter may be asleep. */
    if (v == 0) {
      if (atomic_compare_exchange_weak_explicit(&l->word, &v, me | WAITERS, memory_order_acquire,
                                                memory_order_relaxed))
        return;
      continue;
    }
    if (!(v & WAITERS) && !atomic_compare_exchange_weak_explicit(&l->word, &v, v | WAITERS,
                                                                 memory_order_relaxed, memory_order_relaxed))
      continue;
    vg_os_futex_wait(&l->word, v | WAITERS);
    v = load_relaxed(&l->word);
  }
}

void vg_lock(struct vg_lock *l) {
  if (tl_depth == 0 && unlikely(load_relaxed(&vg_fork_gate) != 0) && !vg_tl_forking) wait_gate();
  unsigned me = self(), v = 0;
  vg_ann_sync_word(&l->word, sizeof l->word);
  if (unlikely(!atomic_compare_exchange_strong_explicit(&l->word, &v, me, memory_order_acquire,
                                                        memory_order_relaxed)))
    lock_slow(l, me);
  tl_depth++;
  vg_ann_acquire(l);
}

void vg_unlock(struct vg_lock *l) {
  tl_depth--;
  vg_ann_release(l);
  if (unlikely(atomic_exchange_explicit(&l->word, 0, memory_order_release) & WAITERS))
    vg_os_futex_wake(&l->word);
}

bool vg_lock_mine(struct vg_lock *l) { return (load_relaxed(&l->word) & ~WAITERS) == self(); }

/* In a fork child, for a lock that prepare() took: the other threads (and
 * their waiter flags) did not come along. */
void vg_lock_reset_child(struct vg_lock *l) {
  store_relaxed(&l->word, 0);
  tl_depth--;
}
