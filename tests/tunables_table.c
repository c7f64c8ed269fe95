/* Prints vigil's tunables table (vg_opt_table, built from src/options.def)
 * as README's markdown, so tests/docs_tunables.sh can check that README and
 * the code agree. */
#include <stdio.h>
#include <string.h>

#include "options.h"

static void human(size_t v) {
  if (v >= ((size_t)1 << 30) && v % ((size_t)1 << 30) == 0) printf("%zug", v >> 30);
  else if (v >= ((size_t)1 << 20) && v % ((size_t)1 << 20) == 0) printf("%zum", v >> 20);
  else if (v >= 1024 && v % 1024 == 0) printf("%zuk", v >> 10);
  else printf("%zu", v);
}

int main(void) {
  printf("| name | default | range | meaning |\n|---|---|---|---|\n");
  for (unsigned i = 0; i < OPT_COUNT; i++) {
    const struct vg_opt_desc *d = &vg_opt_table[i];
    printf("| `%s` | ", d->name);
    if (d->names) {
      const char *n = d->names;
      for (size_t k = 0; k < d->def; k++) n += strcspn(n, ",") + 1;
      printf("%.*s | %s |", (int)strcspn(n, ","), n, d->names);
    } else {
      human(d->def);
      printf(" | ");
      human(d->min);
      printf("..");
      human(d->max);
      printf(" |");
    }
    printf(" %s |\n", d->help);
  }
  return 0;
}
