/* Target threads: 2-4 threads with their own op streams, blocks handed
 * between them through mailboxes (remote frees), joins and thread exits with
 * blocks still alive elsewhere.  Checked by the model, and nothing may be
 * lost once every thread is joined. */
#include "oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const struct oracle_config cfg = {
      .target = "threads", .allow_threads = 1, .check_contents = 1, .check_leaks = 1};
  oracle_run_input(data, size, &cfg);
  return 0;
}
