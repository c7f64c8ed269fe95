/* Target edge: the corners of size, alignment and errno.  Every size and
 * alignment the program names is mapped onto a table of boundaries and
 * extremes, then the program runs as in the api target (model and glibc). */
#include <stdint.h>

#include "oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define M ((size_t)-1)
#define P ((size_t)PTRDIFF_MAX)
/* More than the address space can give, without overflowing: 1 TiB, or 3 GiB on 32-bit. */
#define BIG (sizeof(size_t) == 8 ? (size_t)((uint64_t)1 << 40) : M / 4 * 3)
static const size_t sizes[] = {
    0, 1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 127, 128, 129, 1023, 1024, 1025, 4095, 4096, 4097, 8192, 65535,
    65536, 65537, (128 << 10) - 1, 128 << 10, (128 << 10) + 1, (1 << 20) + 1, (4 << 20) - (192 << 10),
    (4 << 20) - (192 << 10) + 1, (32 << 20) + 1, M, M - 1, M - 15, M - 4096, P, P + 1, P - 1, P - 4096,
    M / 2 + 1, BIG,
};
static const size_t aligns[] = {
    0, 1, 2, 4, 8, 16, 24, 32, 48, 64, 100, 4096, 4097, 8192, 65536, 1 << 20, 1 << 22, M / 2, M / 2 + 1,
    M / 2 + 2, M, 3 * sizeof(void *), sizeof(void *) / 2,
};
#define NS (sizeof sizes / sizeof sizes[0])
#define NA (sizeof aligns / sizeof aligns[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct op ops[PROG_MAX_OPS];
  size_t n = prog_decode(data, size, ops, PROG_MAX_OPS, NULL);
  for (size_t i = 0; i < n; i++) {
    struct op *o = &ops[i];
    o->size = sizes[(o->size ^ (o->size >> 17)) % NS];
    o->nmemb = sizes[(o->nmemb ^ (o->nmemb >> 13)) % NS];
    o->align = aligns[(o->align ^ (o->align >> 11)) % NA];
  }
  const struct oracle_config cfg = {
      .target = "edge", .compare_glibc = 1, .check_contents = 1, .check_leaks = 1};
  oracle_run(ops, n, &cfg);
  return 0;
}
