/* White-box unit tests of the pure pieces: size classes, slot arithmetic,
 * safe-linking, the /sys and /proc parsers and the VIGIL_OPTIONS parser. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "testlib.h"

static void test_size_classes(void) {
  size_t prev = 0;
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    size_t s = class_size(c);
    CHECK(s > prev, "class %u size %zu not above %zu", c, s, prev);
    CHECK(s % VG_ALIGN == 0, "class %u size %zu not 16-aligned", c, s);
    CHECK(size_class(s) == c, "size_class(class_size(%u)) = %u", c, size_class(s));
    CHECK(class_pages(c) * VG_PAGE / s >= 8 || class_pages(c) == 8, "class %u: %u pages", c, class_pages(c));
    CHECK(class_pages(c) * VG_PAGE / s <= VG_BITMAP_WORDS * 64, "class %u bitmap too small", c);
    prev = s;
  }
  CHECK(class_size(VG_NCLASSES - 1) == VG_SMALL_MAX, "largest class %zu", class_size(VG_NCLASSES - 1));
  for (size_t n = 0; n <= VG_SMALL_MAX; n++) {
    unsigned c = size_class(n);
    if (c >= VG_NCLASSES || class_size(c) < n || (c > 0 && class_size(c - 1) >= n && n > 0)) {
      CHECK(0, "size %zu -> class %u (size %zu)", n, c, c < VG_NCLASSES ? class_size(c) : 0);
      break;
    }
  }
  /* Internal fragmentation is bounded: at most 25% above 128 bytes. */
  for (size_t n = 129; n <= VG_SMALL_MAX; n += 7) {
    size_t s = class_size(size_class(n));
    if ((s - n) * 4 > n) {
      CHECK(0, "size %zu wastes %zu in class %zu", n, s - n, s);
      break;
    }
  }
}

/* slot_index must accept exactly the slot boundaries of a run. */
static void test_slot_index(void) {
  static uint8_t area[8 * VG_PAGE] __attribute__((aligned(16)));
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    struct page pg = {0};
    pg.bsize = (uint32_t)class_size(c);
    pg.capacity = (uint32_t)(class_pages(c) * VG_PAGE / pg.bsize);
    pg.magic = (uint32_t)((((uint64_t)1 << 32) + pg.bsize - 1) / pg.bsize);
    pg.start = area;
    size_t span = (size_t)pg.capacity * pg.bsize;
    int bad = 0;
    for (size_t off = 0; off < span + 64 && !bad; off += 16) {
      uint32_t idx = slot_index(&pg, area + off);
      int boundary = off % pg.bsize == 0 && off < span;
      if (boundary ? idx != off / pg.bsize : idx != UINT32_MAX) bad = 1;
    }
    CHECK(!bad, "class %u (%u bytes): slot_index wrong", c, pg.bsize);
    CHECK(slot_index(&pg, area - 16) == UINT32_MAX, "below start accepted");
    /* Far multiples of the block size, above and below: the index is
     * checked against the capacity, not only against the boundary. */
    static const uint64_t far[] = {1, 2, 1000, (uint64_t)1 << 20, (uint64_t)1 << 32, (uint64_t)1 << 40};
    for (unsigned i = 0; i < sizeof far / sizeof far[0]; i++) {
      uint64_t up_off = pg.capacity * far[i] * pg.bsize, down_off = far[i] * pg.bsize;
      /* Only distances the address space holds (on 32-bit targets the far
       * ones would wrap round to the run itself). */
      if (up_off < (uint64_t)UINTPTR_MAX / 4)
        CHECK(slot_index(&pg, (void *)((uintptr_t)area + (uintptr_t)up_off)) == UINT32_MAX,
              "class %u: %llu runs above accepted", c, (unsigned long long)far[i]);
      if (down_off < (uint64_t)UINTPTR_MAX / 4)
        CHECK(slot_index(&pg, (void *)((uintptr_t)area - (uintptr_t)down_off)) == UINT32_MAX,
              "class %u: %llu blocks below accepted", c, (unsigned long long)far[i]);
    }
  }
}

static void test_encode(void) {
  vigil_free(vigil_malloc(1)); /* vigil initialised: the secret sealed */
  uintptr_t saved = vg_secret;
  vg_ro_seal(false);
  vg_secret = (uintptr_t)0x5eed5eed12345678ull; /* its low half on 32-bit */
  int x, y;
  CHECK(decode(encode(&x, &y), &y) == (struct block *)&x, "round trip");
  CHECK(decode(encode(NULL, &y), &y) == NULL, "NULL round trip");
  CHECK(encode(&x, &y) != (uintptr_t)&x, "link stored in the clear");
  CHECK(encode(NULL, &y) != 0, "NULL link stored as 0");
  vg_secret = saved;
  vg_ro_seal(true);
}

static void test_parsers(void) {
  CHECK(vg_os_parse_cpu_list("0-1\n") == 2, "0-1");
  CHECK(vg_os_parse_cpu_list("0\n") == 1, "0");
  CHECK(vg_os_parse_cpu_list("0-3,5,7-8\n") == 7, "list");
  CHECK(vg_os_parse_cpu_list("0-127") == 128, "no newline");
  CHECK(vg_os_parse_cpu_list("") == 0, "empty");
  CHECK(vg_os_parse_cpu_list("x") == 0, "garbage");
  CHECK(vg_os_parse_cpu_list("3-1") == 0, "reversed");
  CHECK(vg_os_parse_cpu_list("1-") == 0, "open range");
  CHECK(vg_os_parse_overcommit("2\n") == 2, "strict");
  CHECK(vg_os_parse_overcommit("0\n") == 0, "heuristic");
  CHECK(vg_os_parse_overcommit("x") == 0, "garbage");
  CHECK(vg_os_cpu_count() >= 1, "cpu count");
  long conf = sysconf(_SC_NPROCESSORS_CONF);
  CHECK(conf <= 0 || vg_os_cpu_count() == (unsigned)conf, "cpu count %u vs sysconf %ld", vg_os_cpu_count(), conf);
}

/* Bad keys and values warn and keep the default; good ones apply. */
static void test_options(void) {
  size_t arena = vg_option(OPT_arena_max), decay = vg_option(OPT_decay_ms);
  CHECK(vg_options_parse("") == 0, "empty string");
  CHECK(vg_options_parse("nonsense=1") == 1, "unknown key");
  CHECK(vg_options_parse("arena_max=abc") == 1 && vg_option(OPT_arena_max) == arena, "bad value");
  CHECK(vg_options_parse("arena_max=99999") == 1 && vg_option(OPT_arena_max) == arena, "out of range");
  CHECK(vg_options_parse("arena_max") == 1, "missing value");
  CHECK(vg_options_parse("arena_max=") == 1, "empty value");
  CHECK(vg_options_parse("decay_ms=18446744073709551616") == 1 && vg_option(OPT_decay_ms) == decay, "overflow");
  CHECK(vg_options_parse("arena_max=3:decay_ms=250") == 0, "two good");
  CHECK(vg_option(OPT_arena_max) == 3 && vg_option(OPT_decay_ms) == 250, "applied");
  CHECK(vg_options_parse("::arena_max=2::") == 0 && vg_option(OPT_arena_max) == 2, "empty items");
  CHECK(vg_options_parse("large_cache=4m") == 0 && vg_option(OPT_large_cache) == (4u << 20), "suffix");
  CHECK(vg_options_parse("large_cache=4x") == 1 && vg_option(OPT_large_cache) == (4u << 20), "bad suffix");
  CHECK(vg_options_parse("decommit=remap") == 0 && vg_option(OPT_decommit) == DECOMMIT_REMAP, "enum");
  CHECK(vg_options_parse("decommit=sometimes") == 1 && vg_option(OPT_decommit) == DECOMMIT_REMAP, "bad enum");
  CHECK(vg_options_parse("arena_max=1:bogus:decay_ms=7") == 1 && vg_option(OPT_decay_ms) == 7, "bad middle item");
  vg_option_set(OPT_arena_max, arena);
  vg_option_set(OPT_decay_ms, decay);
  vg_option_set(OPT_decommit, DECOMMIT_AUTO);
}

int main(void) {
  test_size_classes();
  test_slot_index();
  test_encode();
  test_parsers();
  test_options();
  return test_done("unit_core");
}
