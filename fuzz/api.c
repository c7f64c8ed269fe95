/* Target api: sequential use of every entry point, each op checked by the
 * reference model and compared with glibc's malloc in the same process.
 * The OS seam's munmap and madvise run with their errno clobbered, as a
 * failing syscall would leave it: free must keep errno on those paths too
 * (seed 003). */
#include "os.h"
#include "oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const struct oracle_config cfg = {
      .target = "api", .compare_glibc = 1, .check_contents = 1, .check_leaks = 1};
  atomic_store(&vg_os_fail_for_test, VG_FAIL_UNMAP | VG_FAIL_DECOMMIT);
  oracle_run_input(data, size, &cfg);
  atomic_store(&vg_os_fail_for_test, 0);
  return 0;
}
