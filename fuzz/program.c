/* The op program decoder, encoder and text form.  See fuzz/FORMAT.md. */
#include "program.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[OP_COUNT] = {
    "malloc", "calloc", "realloc", "reallocarray", "free",  "memalign", "aligned_alloc",
    "posix_memalign", "valloc", "pvalloc", "usable", "fill", "check", "trim", "tune",
    "spawn", "join", "pass", "recv", "fork",
};

const char *prog_op_name(unsigned kind) { return kind < OP_COUNT ? names[kind] : "?"; }

/* Each op's fields, in the order of its bytes and of its text: the one
 * description that decode, encode, format and parse all follow. */
enum field { F_END, F_SLOT, F_SIZE, F_NMEMB, F_ALIGN, F_BYTE, F_PAD, F_PARAM, F_VALUE, F_THREAD, F_SPAWN_OPS,
             F_FORK_OPS, F_MAILBOX };
static const char *const field_key[] = {
    [F_SLOT] = "slot",     [F_SIZE] = "size",   [F_NMEMB] = "nmemb",   [F_ALIGN] = "align",
    [F_BYTE] = "byte",     [F_PAD] = "pad",     [F_PARAM] = "param",   [F_VALUE] = "value",
    [F_THREAD] = "thread", [F_SPAWN_OPS] = "ops", [F_FORK_OPS] = "ops", [F_MAILBOX] = "mailbox",
};
#define MAX_FIELDS 3
static const uint8_t op_fields[OP_COUNT][MAX_FIELDS + 1] = {
    [OP_MALLOC] = {F_SLOT, F_SIZE},          [OP_REALLOC] = {F_SLOT, F_SIZE},
    [OP_VALLOC] = {F_SLOT, F_SIZE},          [OP_PVALLOC] = {F_SLOT, F_SIZE},
    [OP_CALLOC] = {F_SLOT, F_NMEMB, F_SIZE}, [OP_REALLOCARRAY] = {F_SLOT, F_NMEMB, F_SIZE},
    [OP_MEMALIGN] = {F_SLOT, F_ALIGN, F_SIZE}, [OP_ALIGNED_ALLOC] = {F_SLOT, F_ALIGN, F_SIZE},
    [OP_POSIX_MEMALIGN] = {F_SLOT, F_ALIGN, F_SIZE},
    [OP_FREE] = {F_SLOT},                    [OP_USABLE] = {F_SLOT},
    [OP_CHECK] = {F_SLOT},                   [OP_FILL] = {F_SLOT, F_BYTE},
    [OP_TRIM] = {F_PAD},                     [OP_TUNE] = {F_PARAM, F_VALUE},
    [OP_SPAWN] = {F_THREAD, F_SPAWN_OPS},    [OP_JOIN] = {F_THREAD},
    [OP_PASS] = {F_SLOT, F_MAILBOX},         [OP_RECV] = {F_MAILBOX, F_SLOT},
    [OP_FORK] = {F_FORK_OPS},
};
static const uint8_t *fields_of(unsigned kind) {
  static const uint8_t none[1] = {F_END};
  return kind < OP_COUNT ? op_fields[kind] : none;
}

/* mallopt parameters TUNE can reach (glibc's values, so no <malloc.h>
 * dependency in the byte format). */
static const int tune_params[] = {1, -1, -2, -3, -4, -5, -6, -7, -8, 0, 12345};
#define NTUNE (sizeof tune_params / sizeof tune_params[0])

/* Alignments that are not plain powers of two, or are absurd. */
static const size_t odd_aligns[] = {
    0, 3, 24, 48, 100, 4097, 12288, (size_t)-1 / 2 + 1, (size_t)-1 / 2 + 2, (size_t)-1, 2 * sizeof(void *) + 8,
};
#define NODD (sizeof odd_aligns / sizeof odd_aligns[0])

/* vigil's size classes and the glibc boundaries near them: 16..128 by 16,
 * then four per doubling up to 64 KiB. */
static size_t class_boundary(unsigned i) {
  if (i < 8) return (size_t)(i + 1) * 16;
  unsigned g = (i - 8) / 4, r = (i - 8) % 4;
  return ((size_t)1 << (7 + g)) + ((size_t)(r + 1) << (5 + g));
}
#define NCLASSES 44u

static const size_t thresholds[] = {128u << 10, 256u << 10, 1u << 20, (4u << 20) - (192u << 10), 32u << 20, 64u << 10};

struct reader {
  const uint8_t *p, *end;
  int short_;
};
static unsigned u8(struct reader *r) {
  if (r->p >= r->end) {
    r->short_ = 1;
    return 0;
  }
  return *r->p++;
}
static uint64_t le(struct reader *r, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)u8(r) << (8 * i);
  return v;
}

static size_t read_size(struct reader *r) {
  unsigned s = u8(r), v, w;
  switch (s & 7) {
    case 0: return u8(r);
    case 1:
      v = u8(r), w = u8(r);
      return class_boundary(v % NCLASSES) + (size_t)(long)((int)(w % 7) - 3);
    case 2: {
      v = u8(r), w = u8(r);
      size_t unit = v & 0x80 ? 65536 : 4096;
      return (size_t)(v % 32 + 1) * unit + (size_t)(long)((int)(w % 9) - 4);
    }
    case 3: {
      v = u8(r), w = u8(r);
      size_t step = v & 0x40 ? 4096 : 1;
      return thresholds[v % 6] + (size_t)((long)((int)(w % 33) - 16) * (long)step);
    }
    case 4: {
      v = u8(r), w = u8(r);
      switch (v % 5) {
        case 0: return w % 4; /* 0..3 */
        case 1: return (size_t)-1 - w;
        case 2: return (size_t)PTRDIFF_MAX + (size_t)(long)((int)w - 128);
        case 3: return (size_t)-1 / 2 + w;
        default: return ((size_t)1 << (sizeof(size_t) * 8 - 24)) + w;
      }
    }
    case 5: return (size_t)le(r, 2);
    case 6: return (size_t)le(r, 3);
    default: return (size_t)le(r, 8);
  }
}

static size_t read_align(struct reader *r) {
  unsigned a = u8(r);
  if (a < 224) return (size_t)1 << (a % 24);
  if (a < 255) return odd_aligns[(a - 224) % NODD];
  return (size_t)le(r, 8);
}

size_t prog_header_len(const char *target, const uint8_t *data, size_t len) {
  if (strcmp(target, "corrupt") == 0) return len < 4 ? len : 4;
  if (strcmp(target, "options") == 0) return len ? 1 + (data[0] < len - 1 ? data[0] : len - 1) : 0;
  return 0;
}

size_t prog_decode(const uint8_t *data, size_t len, struct op *ops, size_t max, size_t *used) {
  struct reader r = {data, data + len, 0};
  size_t n = 0;
  while (n < max && r.p < r.end) {
    const uint8_t *start = r.p;
    struct op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)(u8(&r) % OP_COUNT);
    for (const uint8_t *f = fields_of(o.kind); *f != F_END; f++) {
      switch (*f) {
        case F_SLOT: o.slot = (uint8_t)(u8(&r) % PROG_SLOTS); break;
        case F_SIZE: case F_PAD: o.size = read_size(&r); break;
        case F_NMEMB: o.nmemb = read_size(&r); break;
        case F_ALIGN: o.align = read_align(&r); break;
        case F_BYTE: o.byte = (uint8_t)u8(&r); break;
        case F_PARAM: {
          unsigned p = u8(&r);
          o.param = p == 255 ? (int)(int32_t)(uint32_t)le(&r, 4) : tune_params[p % NTUNE];
          break;
        }
        case F_VALUE: o.value = (int)(int32_t)(uint32_t)le(&r, 4); break;
        case F_THREAD: o.thread = (uint8_t)(u8(&r) % (PROG_THREADS - 1) + 1); break;
        case F_SPAWN_OPS: o.count = (uint16_t)(u8(&r) % 64 + 1); break;
        case F_FORK_OPS: o.count = (uint16_t)(u8(&r) % 32 + 1); break;
        case F_MAILBOX: o.mailbox = (uint8_t)(u8(&r) % PROG_MAILBOXES); break;
      }
    }
    if (r.short_) {
      r.p = start; /* a truncated op is dropped: the program is just shorter */
      break;
    }
    ops[n++] = o;
  }
  if (used) *used = (size_t)(r.p - data);
  return n;
}

/* ---- encoding: the explicit forms ---- */
struct writer {
  uint8_t *p, *end;
  int full;
};
static void put8(struct writer *w, unsigned v) {
  if (w->p < w->end) *w->p++ = (uint8_t)v;
  else w->full = 1;
}
static void putle(struct writer *w, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; i++) put8(w, (unsigned)(v >> (8 * i)) & 0xff);
}
static void put_size(struct writer *w, size_t s) {
  put8(w, 7);
  putle(w, s, 8);
}
static void put_align(struct writer *w, size_t a) {
  put8(w, 255);
  putle(w, a, 8);
}

size_t prog_encode(const struct op *o, uint8_t *out, size_t cap) {
  struct writer w = {out, out + cap, 0};
  put8(&w, o->kind);
  for (const uint8_t *f = fields_of(o->kind); *f != F_END; f++) {
    switch (*f) {
      case F_SLOT: put8(&w, o->slot); break;
      case F_SIZE: case F_PAD: put_size(&w, o->size); break;
      case F_NMEMB: put_size(&w, o->nmemb); break;
      case F_ALIGN: put_align(&w, o->align); break;
      case F_BYTE: put8(&w, o->byte); break;
      case F_PARAM: put8(&w, 255), putle(&w, (uint32_t)o->param, 4); break;
      case F_VALUE: putle(&w, (uint32_t)o->value, 4); break;
      case F_THREAD: put8(&w, (unsigned)(o->thread - 1)); break;
      case F_SPAWN_OPS: case F_FORK_OPS: put8(&w, (unsigned)(o->count - 1)); break;
      case F_MAILBOX: put8(&w, o->mailbox); break;
    }
  }
  return w.full ? 0 : (size_t)(w.p - out);
}

/* ---- text ---- */
/* Appends to buf what snprintf would; *len counts the whole text even when
 * it does not fit. */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
}

size_t prog_format(const struct op *o, char *buf, size_t cap) {
  size_t len = 0;
  if (cap) buf[0] = 0;
  append(buf, cap, &len, "%s", prog_op_name(o->kind));
  for (const uint8_t *f = fields_of(o->kind); *f != F_END; f++) {
    const char *k = field_key[*f];
    switch (*f) {
      case F_SLOT: append(buf, cap, &len, " %s=%u", k, o->slot); break;
      case F_SIZE: case F_PAD: append(buf, cap, &len, " %s=%zu", k, o->size); break;
      case F_NMEMB: append(buf, cap, &len, " %s=%zu", k, o->nmemb); break;
      case F_ALIGN: append(buf, cap, &len, " %s=%zu", k, o->align); break;
      case F_BYTE: append(buf, cap, &len, " %s=%u", k, o->byte); break;
      case F_PARAM: append(buf, cap, &len, " %s=%d", k, o->param); break;
      case F_VALUE: append(buf, cap, &len, " %s=%d", k, o->value); break;
      case F_THREAD: append(buf, cap, &len, " %s=%u", k, o->thread); break;
      case F_SPAWN_OPS: case F_FORK_OPS: append(buf, cap, &len, " %s=%u", k, o->count); break;
      case F_MAILBOX: append(buf, cap, &len, " %s=%u", k, o->mailbox); break;
    }
  }
  return len < cap ? len : cap ? cap - 1 : 0;
}

int prog_parse_bytes(const char *line, uint8_t *out, size_t cap, char *err, size_t errcap) {
  while (*line == ' ' || *line == '\t') line++;
  if (strncmp(line, "bytes", 5) != 0 || (line[5] != ' ' && line[5] != '\t' && line[5] != 0)) return -1;
  const char *p = line + 5;
  int n = 0;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (*p == 0 || *p == '#' || *p == '\n' || *p == '\r') return n;
    char *end;
    unsigned long v = strtoul(p, &end, 0);
    if (end == p || v > 255 || (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r')) {
      snprintf(err, errcap, "bytes: '%.*s' is not a byte (0..255)", (int)strcspn(p, " \t\n"), p);
      return -1;
    }
    if ((size_t)n == cap) {
      snprintf(err, errcap, "bytes: more than %zu", cap);
      return -1;
    }
    out[n++] = (uint8_t)v;
    p = end;
  }
}

int prog_number(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end != 0 || errno != 0 || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* key=value pairs; numbers in decimal, 0x hex, or negative decimal. */
static int field(const char *line, const char *key, unsigned long long *out, int *neg) {
  size_t kl = strlen(key);
  for (const char *p = line; (p = strstr(p, key)) != NULL; p++) {
    if ((p == line || p[-1] == ' ' || p[-1] == '\t') && p[kl] == '=') {
      const char *v = p + kl + 1;
      char *end;
      *neg = *v == '-';
      *out = strtoull(*neg ? v + 1 : v, &end, 0);
      return end != (*neg ? v + 1 : v) && (*end == 0 || *end == ' ' || *end == '\t' || *end == '\n' || *end == '\r' || *end == '#');
    }
  }
  return 0;
}

int prog_parse(const char *line, struct op *o, char *err, size_t errcap) {
  while (*line == ' ' || *line == '\t') line++;
  if (*line == 0 || *line == '\n' || *line == '#') return 0;
  memset(o, 0, sizeof *o);
  size_t wl = strcspn(line, " \t\n\r");
  unsigned k;
  for (k = 0; k < OP_COUNT; k++)
    if (strlen(names[k]) == wl && strncmp(names[k], line, wl) == 0) break;
  if (k == OP_COUNT) {
    snprintf(err, errcap, "unknown op '%.*s'", (int)wl, line);
    return -1;
  }
  o->kind = (uint8_t)k;
  for (const uint8_t *f = fields_of(k); *f != F_END; f++) {
    const char *key = field_key[*f];
    unsigned long long v;
    int neg;
    if (!field(line, key, &v, &neg)) {
      snprintf(err, errcap, "%s: missing or bad %s=", names[k], key);
      return -1;
    }
    int ok = !neg;
    switch (*f) {
      case F_SLOT: ok = ok && v < PROG_SLOTS, o->slot = (uint8_t)v; break;
      case F_SIZE: case F_PAD: o->size = (size_t)v; break;
      case F_NMEMB: o->nmemb = (size_t)v; break;
      case F_ALIGN: o->align = (size_t)v; break;
      case F_BYTE: ok = ok && v < 256, o->byte = (uint8_t)v; break;
      case F_PARAM: case F_VALUE: {
        ok = v <= (neg ? 0x80000000ull : 0x7fffffffull);
        int x = ok ? (int)(neg ? -(long long)v : (long long)v) : 0;
        if (*f == F_PARAM) o->param = x;
        else o->value = x;
        break;
      }
      case F_THREAD: ok = ok && v >= 1 && v < PROG_THREADS, o->thread = (uint8_t)v; break;
      case F_SPAWN_OPS: ok = ok && v >= 1 && v <= 64, o->count = (uint16_t)v; break;
      case F_FORK_OPS: ok = ok && v >= 1 && v <= 32, o->count = (uint16_t)v; break;
      case F_MAILBOX: ok = ok && v < PROG_MAILBOXES, o->mailbox = (uint8_t)v; break;
    }
    if (!ok) {
      snprintf(err, errcap, "%s: %s= out of range", names[k], key);
      return -1;
    }
  }
  return 1;
}
