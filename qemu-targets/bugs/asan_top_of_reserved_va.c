/* ASan (clang 14) under QEMU 7.2 linux-user with -R (reserved_va): QEMU
 * hands out guest mappings from the top of the reserved space down, so one
 * can end exactly at its top.  With -R 0x8000000000 that top is 2^39, the
 * end of ASan's aarch64 39-bit layout, and ASan's unpoison of the mapping
 * computes the shadow of its end address (one past the last byte), which
 * is outside the layout: "CHECK failed: asan_mapping.h:359
 * ((AddrIsInMem(p))) != (0)".  Natively the top of the address space is the
 * stack's, so no mapping ends there.  vigil unpoisons every mapping it
 * makes (src/annotate.h), and the aarch64 libFuzzer runs met this once the
 * space below had filled (qemu-targets/README.md, "Known QEMU bugs";
 * tests/qemu_asan_top.sh).  The workaround: -R one page short of 2^39.
 *
 * Maps 1 GiB PROT_NONE regions until the guest space is full, then
 * unpoisons the one that ends highest.  Prints that end, then "unpoisoned"
 * and exits 0 if ASan let it be.  Build: clang --target=aarch64-linux-gnu
 * -fsanitize=address; run with ASAN_OPTIONS=detect_leaks=0 (no LSan under
 * QEMU). */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

int main(void) {
  const size_t size = (size_t)1 << 30;
  uintptr_t top = 0;
  void *highest = NULL;
  for (int i = 0; i < 4096; i++) { /* 4 TiB: more than any -R here */
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) break;
    if ((uintptr_t)p + size > top) top = (uintptr_t)p + size, highest = p;
  }
  if (highest == NULL) return 2;
  printf("highest mapping ends at %#lx\n", (unsigned long)top);
  fflush(stdout);
  __asan_unpoison_memory_region(highest, size);
  printf("unpoisoned\n");
  return 0;
}
