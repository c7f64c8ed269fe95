/* Tunables: VIGIL_OPTIONS parsing and mallopt, without allocating. */
#include <malloc.h>
#include <string.h>

#include "internal.h"

/* A maximum the table gives in 64 bits, cut to what size_t holds (32-bit targets). */
#define VG_OPT_CAP(v) ((uint64_t)(v) > SIZE_MAX ? SIZE_MAX : (size_t)(v))

const struct vg_opt_desc vg_opt_table[OPT_COUNT] = {
#define OPT(name_, def_, min_, max_, names_, help_) \
  [OPT_##name_] = {.name = #name_, .names = names_, .help = help_, .def = (size_t)(def_), .min = (size_t)(min_), .max = VG_OPT_CAP(max_)},
#include "options.def"
#undef OPT
};

_Atomic size_t vg_opt_value[OPT_COUNT] = {
#define OPT(name_, def_, min_, max_, names_, help_) [OPT_##name_] = (size_t)(def_),
#include "options.def"
#undef OPT
};
_Atomic int vg_opt_thresholds_fixed;

void vg_option_set(enum vg_opt o, size_t v) {
  store_relaxed(&vg_opt_value[o], v);
  if (o == OPT_mmap_threshold || o == OPT_trim_threshold) store_relaxed(&vg_opt_thresholds_fixed, 1);
}

/* A tiny string builder over a caller's buffer: the warning path must not
 * allocate. */
struct sbuf {
  char *p;
  size_t n, cap;
};
static void put(struct sbuf *b, const char *s, size_t n) {
  while (n-- && b->n + 1 < b->cap) b->p[b->n++] = *s++;
}
static void puts_(struct sbuf *b, const char *s) { put(b, s, strlen(s)); }
static void putu(struct sbuf *b, size_t v) {
  char t[24];
  int i = 0;
  do t[i++] = (char)('0' + v % 10);
  while ((v /= 10) && i < 24);
  while (i--) put(b, &t[i], 1);
}

/* Value syntax: decimal with optional k/m/g suffix, or one of `names`. */
static bool parse_value(const struct vg_opt_desc *d, const char *s, size_t n, size_t *out) {
  if (n == 0) return false;
  if (d->names) {
    const char *w = d->names;
    for (size_t i = 0; *w; i++) {
      size_t wl = strcspn(w, ",");
      if (wl == n && memcmp(w, s, n) == 0) {
        *out = i;
        return true;
      }
      w += wl + (w[wl] == ',');
    }
  }
  size_t v = 0, i = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    size_t d10 = (size_t)(s[i] - '0');
    if (v > (SIZE_MAX - d10) / 10) return false;
    v = v * 10 + d10;
  }
  if (i == 0) return false;
  if (i + 1 == n) {
    unsigned shift = s[i] == 'k' || s[i] == 'K' ? 10 : s[i] == 'm' || s[i] == 'M' ? 20 : s[i] == 'g' || s[i] == 'G' ? 30 : 0;
    if (shift == 0 || v > (SIZE_MAX >> shift)) return false;
    v <<= shift;
  } else if (i != n) {
    return false;
  }
  if (v < d->min || v > d->max) return false;
  *out = v;
  return true;
}

static void warn(const char *what, const char *item, size_t n, const struct vg_opt_desc *d) {
  char buf[256];
  struct sbuf b = {buf, 0, sizeof buf};
  puts_(&b, "vigil: VIGIL_OPTIONS: ");
  puts_(&b, what);
  puts_(&b, " '");
  put(&b, item, n > 64 ? 64 : n);
  puts_(&b, "'");
  if (d) {
    puts_(&b, " for ");
    puts_(&b, d->name);
    puts_(&b, " (");
    if (d->names) {
      puts_(&b, d->names);
      puts_(&b, " or ");
    }
    putu(&b, d->min);
    puts_(&b, "..");
    putu(&b, d->max);
    puts_(&b, "); keeping ");
    putu(&b, vg_option((enum vg_opt)(d - vg_opt_table)));
  } else {
    puts_(&b, " ignored");
  }
  puts_(&b, "\n");
  vg_os_write_err(buf, b.n);
}

int vg_options_parse(const char *s) {
  int warnings = 0;
  while (s && *s) {
    size_t len = strcspn(s, ":");
    const char *eq = memchr(s, '=', len);
    if (len > 0) {
      size_t klen = eq ? (size_t)(eq - s) : len;
      const struct vg_opt_desc *d = NULL;
      for (unsigned i = 0; i < OPT_COUNT; i++)
        if (strlen(vg_opt_table[i].name) == klen && memcmp(vg_opt_table[i].name, s, klen) == 0) d = &vg_opt_table[i];
      size_t v;
      if (d == NULL) {
        warn("unknown option", s, klen, NULL), warnings++;
      } else if (!eq) {
        warn("missing value", s, len, d), warnings++;
      } else if (!parse_value(d, eq + 1, len - klen - 1, &v)) {
        warn("bad value", eq + 1, len - klen - 1, d), warnings++;
      } else {
        vg_option_set((enum vg_opt)(d - vg_opt_table), v);
      }
    }
    s += len + (s[len] == ':');
  }
  return warnings;
}

void vg_options_init(void) { vg_options_parse(vg_os_getenv("VIGIL_OPTIONS")); }

/* mallopt: glibc 2.36's return values, mapped to vigil's table where the
 * parameter means something here.  M_MXFAST, M_TOP_PAD, M_MMAP_MAX,
 * M_CHECK_ACTION and M_ARENA_TEST have no counterpart: accepted, no effect. */
int vigil_mallopt(int param, int value) {
  vg_init();
  switch (param) {
    case M_MXFAST:
      return value >= 0 && (size_t)value <= 80 * sizeof(size_t) / 4;
    case M_TRIM_THRESHOLD:
      vg_option_set(OPT_trim_threshold, (size_t)(long)value);
      return 1;
    case M_MMAP_THRESHOLD:
      /* glibc 2.36 takes any value here (a negative one as a huge size). */
      vg_option_set(OPT_mmap_threshold, (size_t)(long)value);
      return 1;
    case M_ARENA_MAX:
      if (value > 0) vg_option_set(OPT_arena_max, (size_t)value < VG_ARENAS_MAX ? (size_t)value : VG_ARENAS_MAX);
      return 1;
    case M_PERTURB:
      vg_option_set(OPT_perturb, (size_t)value & 0xff);
      return 1;
    default:
      return 1;
  }
}
VG_EXPORT_STD(mallopt)
