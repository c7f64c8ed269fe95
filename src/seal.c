/* Read-only metadata: what vigil's checks trust and that changes seldom
 * lives on pages of its own that are read-only between changes, so a stray
 * or hostile write (an overflow that left the heap, a forged pointer's
 * target) faults instead of forging it.
 *
 *   vg_ro        the secret and the hardening level: written once at
 *                start-up, then sealed, at every level (one mprotect per
 *                process).  A known secret would let an attacker forge
 *                free-list links, tags, cookies and canaries.
 *   vg_registry  which 4 MiB segments are vigil's: a bit set there makes
 *                any memory pass free's pointer validation.  Sealed at
 *                harden >= 2; a segment's map and release open the one OS
 *                page that holds its bit for the store (two mprotects per
 *                4 MiB segment mapped or released), under the meta lock, so
 *                that two arenas never open and close one page across each
 *                other, and fork (which takes the meta lock) never copies
 *                it open.
 *
 * Not sealed, measured before choosing (README, "Hardening"): page
 * descriptors, segment headers, the fit table and the large-block table
 * change on every malloc and free of some size, and an mprotect pair costs
 * 55-150 us on the machine the benchmarks ran on, a hundred small mallocs'
 * worth.  Those are kept in out-of-band, guarded memory and checked against
 * the secret instead (segment cookies, page kinds, slot bitmaps). */
#include <errno.h>

#include "internal.h"

struct vg_ro vg_ro;

void vg_ro_seal(bool on) {
  /* A refusal leaves the page as it was: writable stays correct, only less
   * hard; read-only is what a failed opening would leave, and only the tests
   * and the fuzzers' level changes open it. */
  (void)vg_os_seal(&vg_ro, sizeof vg_ro, on);
}

/* Whether the registry is sealed now: changed only under the meta lock. */
static bool registry_sealed;

static void *registry_page(uintptr_t idx) {
  return (void *)align_down((uintptr_t)&vg_registry[idx / 64], vg_os_page_size());
}

bool vg_registry_set(uintptr_t base, bool on) {
  uintptr_t idx = base >> VG_SEG_SHIFT;
  uint64_t bit = (uint64_t)1 << (idx % 64);
  vg_lock(&vg_meta_lock);
  bool sealed = registry_sealed;
  if (sealed && vg_os_seal(registry_page(idx), vg_os_page_size(), 0) != 0) {
    vg_unlock(&vg_meta_lock);
    errno = ENOMEM;
    return false;
  }
  if (on) atomic_fetch_or_explicit(&vg_registry[idx / 64], bit, memory_order_release);
  else atomic_fetch_and_explicit(&vg_registry[idx / 64], ~bit, memory_order_release);
  /* Closing a page merges it back into its neighbours' mapping, which the
   * kernel does not refuse for want of mappings. */
  if (sealed) (void)vg_os_seal(registry_page(idx), vg_os_page_size(), 1);
  vg_unlock(&vg_meta_lock);
  return true;
}

void vg_registry_seal_level(void) {
  bool want = harden_level() >= HARDEN_QUARANTINE;
  vg_lock(&vg_meta_lock);
  if (want != registry_sealed && vg_os_seal(vg_registry, sizeof vg_registry, want) == 0) registry_sealed = want;
  vg_unlock(&vg_meta_lock);
}
