/* The op program decoder, encoder and text form.  See fuzz/FORMAT.md. */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[OP_COUNT] = {
    "malloc", "calloc", "realloc", "reallocarray", "free",  "memalign", "aligned_alloc",
    "posix_memalign", "valloc", "pvalloc", "usable", "fill", "check", "trim", "tune",
    "spawn", "join", "pass", "recv", "fork",
};

const char *prog_op_name(unsigned kind) { return kind < OP_COUNT ? names[kind] : "?"; }

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
    switch (o.kind) {
      case OP_MALLOC: case OP_REALLOC: case OP_VALLOC: case OP_PVALLOC:
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        o.size = read_size(&r);
        break;
      case OP_CALLOC: case OP_REALLOCARRAY:
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        o.nmemb = read_size(&r);
        o.size = read_size(&r);
        break;
      case OP_MEMALIGN: case OP_ALIGNED_ALLOC: case OP_POSIX_MEMALIGN:
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        o.align = read_align(&r);
        o.size = read_size(&r);
        break;
      case OP_FREE: case OP_USABLE: case OP_CHECK:
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        break;
      case OP_FILL:
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        o.byte = (uint8_t)u8(&r);
        break;
      case OP_TRIM:
        o.size = read_size(&r);
        break;
      case OP_TUNE: {
        unsigned p = u8(&r);
        o.param = p == 255 ? (int)(int32_t)(uint32_t)le(&r, 4) : tune_params[p % NTUNE];
        o.value = (int)(int32_t)(uint32_t)le(&r, 4);
        break;
      }
      case OP_SPAWN:
        o.thread = (uint8_t)(u8(&r) % (PROG_THREADS - 1) + 1);
        o.count = (uint16_t)(u8(&r) % 64 + 1);
        break;
      case OP_JOIN:
        o.thread = (uint8_t)(u8(&r) % (PROG_THREADS - 1) + 1);
        break;
      case OP_PASS:
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        o.mailbox = (uint8_t)(u8(&r) % PROG_MAILBOXES);
        break;
      case OP_RECV:
        o.mailbox = (uint8_t)(u8(&r) % PROG_MAILBOXES);
        o.slot = (uint8_t)(u8(&r) % PROG_SLOTS);
        break;
      case OP_FORK:
        o.count = (uint16_t)(u8(&r) % 32 + 1);
        break;
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
  switch (o->kind) {
    case OP_MALLOC: case OP_REALLOC: case OP_VALLOC: case OP_PVALLOC:
      put8(&w, o->slot), put_size(&w, o->size);
      break;
    case OP_CALLOC: case OP_REALLOCARRAY:
      put8(&w, o->slot), put_size(&w, o->nmemb), put_size(&w, o->size);
      break;
    case OP_MEMALIGN: case OP_ALIGNED_ALLOC: case OP_POSIX_MEMALIGN:
      put8(&w, o->slot), put_align(&w, o->align), put_size(&w, o->size);
      break;
    case OP_FREE: case OP_USABLE: case OP_CHECK:
      put8(&w, o->slot);
      break;
    case OP_FILL:
      put8(&w, o->slot), put8(&w, o->byte);
      break;
    case OP_TRIM:
      put_size(&w, o->size);
      break;
    case OP_TUNE:
      put8(&w, 255), putle(&w, (uint32_t)o->param, 4), putle(&w, (uint32_t)o->value, 4);
      break;
    case OP_SPAWN:
      put8(&w, (unsigned)(o->thread - 1)), put8(&w, (unsigned)(o->count - 1));
      break;
    case OP_JOIN:
      put8(&w, (unsigned)(o->thread - 1));
      break;
    case OP_PASS:
      put8(&w, o->slot), put8(&w, o->mailbox);
      break;
    case OP_RECV:
      put8(&w, o->mailbox), put8(&w, o->slot);
      break;
    case OP_FORK:
      put8(&w, (unsigned)(o->count - 1));
      break;
  }
  return w.full ? 0 : (size_t)(w.p - out);
}

/* ---- text ---- */
size_t prog_format(const struct op *o, char *buf, size_t cap) {
  int n = 0;
  const char *name = prog_op_name(o->kind);
  switch (o->kind) {
    case OP_MALLOC: case OP_REALLOC: case OP_VALLOC: case OP_PVALLOC:
      n = snprintf(buf, cap, "%s slot=%u size=%zu", name, o->slot, o->size);
      break;
    case OP_CALLOC: case OP_REALLOCARRAY:
      n = snprintf(buf, cap, "%s slot=%u nmemb=%zu size=%zu", name, o->slot, o->nmemb, o->size);
      break;
    case OP_MEMALIGN: case OP_ALIGNED_ALLOC: case OP_POSIX_MEMALIGN:
      n = snprintf(buf, cap, "%s slot=%u align=%zu size=%zu", name, o->slot, o->align, o->size);
      break;
    case OP_FREE: case OP_USABLE: case OP_CHECK:
      n = snprintf(buf, cap, "%s slot=%u", name, o->slot);
      break;
    case OP_FILL:
      n = snprintf(buf, cap, "fill slot=%u byte=%u", o->slot, o->byte);
      break;
    case OP_TRIM:
      n = snprintf(buf, cap, "trim pad=%zu", o->size);
      break;
    case OP_TUNE:
      n = snprintf(buf, cap, "tune param=%d value=%d", o->param, o->value);
      break;
    case OP_SPAWN:
      n = snprintf(buf, cap, "spawn thread=%u ops=%u", o->thread, o->count);
      break;
    case OP_JOIN:
      n = snprintf(buf, cap, "join thread=%u", o->thread);
      break;
    case OP_PASS:
      n = snprintf(buf, cap, "pass slot=%u mailbox=%u", o->slot, o->mailbox);
      break;
    case OP_RECV:
      n = snprintf(buf, cap, "recv mailbox=%u slot=%u", o->mailbox, o->slot);
      break;
    case OP_FORK:
      n = snprintf(buf, cap, "fork ops=%u", o->count);
      break;
  }
  if (n < 0) n = 0;
  return (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
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
  struct {
    const char *key;
    int needed;
  } want[4];
  int nw = 0;
  switch (k) {
    case OP_MALLOC: case OP_REALLOC: case OP_VALLOC: case OP_PVALLOC:
      want[nw++] = (typeof(want[0])){"slot", 1}, want[nw++] = (typeof(want[0])){"size", 1};
      break;
    case OP_CALLOC: case OP_REALLOCARRAY:
      want[nw++] = (typeof(want[0])){"slot", 1}, want[nw++] = (typeof(want[0])){"nmemb", 1};
      want[nw++] = (typeof(want[0])){"size", 1};
      break;
    case OP_MEMALIGN: case OP_ALIGNED_ALLOC: case OP_POSIX_MEMALIGN:
      want[nw++] = (typeof(want[0])){"slot", 1}, want[nw++] = (typeof(want[0])){"align", 1};
      want[nw++] = (typeof(want[0])){"size", 1};
      break;
    case OP_FREE: case OP_USABLE: case OP_CHECK:
      want[nw++] = (typeof(want[0])){"slot", 1};
      break;
    case OP_FILL:
      want[nw++] = (typeof(want[0])){"slot", 1}, want[nw++] = (typeof(want[0])){"byte", 1};
      break;
    case OP_TRIM:
      want[nw++] = (typeof(want[0])){"pad", 1};
      break;
    case OP_TUNE:
      want[nw++] = (typeof(want[0])){"param", 1}, want[nw++] = (typeof(want[0])){"value", 1};
      break;
    case OP_SPAWN:
      want[nw++] = (typeof(want[0])){"thread", 1}, want[nw++] = (typeof(want[0])){"ops", 1};
      break;
    case OP_JOIN:
      want[nw++] = (typeof(want[0])){"thread", 1};
      break;
    case OP_PASS: case OP_RECV:
      want[nw++] = (typeof(want[0])){"slot", 1}, want[nw++] = (typeof(want[0])){"mailbox", 1};
      break;
    case OP_FORK:
      want[nw++] = (typeof(want[0])){"ops", 1};
      break;
  }
  for (int i = 0; i < nw; i++) {
    unsigned long long v;
    int neg;
    if (!field(line, want[i].key, &v, &neg)) {
      snprintf(err, errcap, "%s: missing or bad %s=", names[k], want[i].key);
      return -1;
    }
    const char *key = want[i].key;
    int ok = 1;
    if (!strcmp(key, "slot")) ok = !neg && v < PROG_SLOTS, o->slot = (uint8_t)v;
    else if (!strcmp(key, "size") || !strcmp(key, "pad")) ok = !neg, o->size = (size_t)v;
    else if (!strcmp(key, "nmemb")) ok = !neg, o->nmemb = (size_t)v;
    else if (!strcmp(key, "align")) ok = !neg, o->align = (size_t)v;
    else if (!strcmp(key, "byte")) ok = !neg && v < 256, o->byte = (uint8_t)v;
    else if (!strcmp(key, "param") || !strcmp(key, "value")) {
      ok = v <= (neg ? 0x80000000ull : 0x7fffffffull);
      int x = ok ? (int)(neg ? -(long long)v : (long long)v) : 0;
      if (key[0] == 'p') o->param = x;
      else o->value = x;
    }
    else if (!strcmp(key, "thread")) ok = !neg && v >= 1 && v < PROG_THREADS, o->thread = (uint8_t)v;
    else if (!strcmp(key, "mailbox")) ok = !neg && v < PROG_MAILBOXES, o->mailbox = (uint8_t)v;
    else if (!strcmp(key, "ops")) ok = !neg && v >= 1 && v <= (k == OP_FORK ? 32u : 64u), o->count = (uint16_t)v;
    if (!ok) {
      snprintf(err, errcap, "%s: %s= out of range", names[k], key);
      return -1;
    }
  }
  return 1;
}
