/* Bootstrap.  The first allocation in the process initialises vigil without
 * allocating: options come from getenv, the secret from getrandom(2), the
 * CPU count from /sys with raw read(2).  The secret and the level are
 * sealed read-only as soon as they are set (seal.c).  Only after vigil is ready does it
 * call what may allocate itself (pthread_atfork), so that recursion lands
 * in a working allocator.  Safe when preloaded into any program, including
 * ones that allocate from constructors or from dlsym/TLS set-up. */

#include "internal.h"

_Atomic int vg_ready;
static _Atomic int init_lock;

void vg_init_slow(void) {
  while (atomic_exchange_explicit(&init_lock, 1, memory_order_acquire)) {
    if (load_acquire(&vg_ready)) return;
    vg_os_yield();
  }
  if (!load_relaxed(&vg_ready)) {
    vg_options_init();
    vg_harden_init();
    uintptr_t s = 0;
    if (vg_os_random(&s, sizeof s) != 0 || s == 0)
      s = ((uintptr_t)&s ^ (uintptr_t)vg_os_now_ns()) * (uintptr_t)0x9E3779B97F4A7C15ull;
    vg_secret = s;
    vg_ro_seal(true);
    vg_registry_seal_level();
    (void)vg_os_page_size();
    (void)vg_arena_count();
    vg_decommit_init();
    vg_arena_init();
    store_release(&vg_ready, 1);
    vg_fork_register();
  }
  atomic_store_explicit(&init_lock, 0, memory_order_release);
}
