/* Target options: tunable strings and mallopt.  The first byte gives the
 * length of a VIGIL_OPTIONS string taken from the input; the parser must
 * never crash and must leave every tunable in its range (or at its
 * default).  The rest is a program, mostly tune ops, run as in api (mallopt
 * return values compared with glibc's). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct op ops[PROG_MAX_OPS];
  char str[256];
  size_t used = prog_header_len("options", data, size);
  size_t len = used ? used - 1 : 0;
  memcpy(str, data + 1, len);
  str[len] = 0;
  /* The parser's warnings (one line per bad item) go to stderr: keep them out
   * of the fuzzer's log. */
  int saved = dup(2), null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, 2);
  vg_options_parse(str);
  if (saved >= 0) dup2(saved, 2), close(saved);
  if (null >= 0) close(null);
  for (unsigned k = 0; k < OPT_COUNT; k++) {
    size_t v = vg_option((enum vg_opt)k);
    const struct vg_opt_desc *d = &vg_opt_table[k];
    if (v < d->min || v > d->max) {
      struct op none = {0};
      oracle_fail("options", 0, &none, "VIGIL_OPTIONS '%s' left %s = %zu outside %zu..%zu", str, d->name, v, d->min,
                  d->max);
    }
  }
  size_t n = prog_decode(data + used, size - used, ops, PROG_MAX_OPS, NULL);
  const struct oracle_config cfg = {
      .target = "options", .compare_glibc = 1, .check_contents = 1, .check_leaks = 1};
  oracle_run(ops, n, &cfg); /* resets every tunable when done */
  return 0;
}
