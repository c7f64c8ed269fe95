/* Tunables: one table (options.def), read without allocating. */
#ifndef VIGIL_OPTIONS_H
#define VIGIL_OPTIONS_H

#include <stdatomic.h>
#include <stddef.h>

enum vg_opt {
#define OPT(name, def, min, max, names, help) OPT_##name,
#include "options.def"
#undef OPT
  OPT_COUNT
};

enum { DECOMMIT_AUTO, DECOMMIT_MADVISE, DECOMMIT_REMAP };

struct vg_opt_desc {
  const char *name, *names, *help;
  size_t def, min, max;
};
extern const struct vg_opt_desc vg_opt_table[OPT_COUNT];
extern _Atomic size_t vg_opt_value[OPT_COUNT];
/* Set once the user fixed mmap_threshold or trim_threshold (environment or
 * mallopt): like glibc, the thresholds then stop adjusting themselves. */
extern _Atomic int vg_opt_thresholds_fixed;

static inline size_t vg_option(enum vg_opt o) {
  return atomic_load_explicit(&vg_opt_value[o], memory_order_relaxed);
}
void vg_option_set(enum vg_opt o, size_t v);
/* Parses a VIGIL_OPTIONS string.  Bad keys and values get one warning line on
 * stderr each and leave the default.  Returns the number of warnings. */
int vg_options_parse(const char *s);
void vg_options_init(void);

#endif
