/* The "none" fuzzing engine of OSS-Fuzz's build contract, for check.sh's
 * memory configuration: a main that runs LLVMFuzzerTestOneInput once on each
 * file named on the command line.  Used where no MemorySanitizer-built
 * libFuzzer exists (Debian's is not): the targets and vigil are then built
 * with -fsanitize=memory by build.sh and run over their seed corpora. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  static uint8_t buf[1 << 20];
  int ran = 0;
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (f == NULL) {
      fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[i]);
      return 1;
    }
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    ran++;
  }
  printf("%s: ran %d inputs\n", argv[0], ran);
  return 0;
}
