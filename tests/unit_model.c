/* The reference model's own checks (diff/model.c), which every fuzz target
 * trusts: a block that overlaps a live one is refused wherever that one
 * lives (a slot, or a mailbox it was passed to), and nowhere else; the
 * content check names the first wrong byte, wherever it is.  The addresses
 * are never dereferenced by model_add, so they are made up, 16-aligned. */
#include <stdint.h>
#include <string.h>

#include "model.h"
#include "testlib.h"

static struct model m;
static _Alignas(4096) unsigned char arena[1 << 16];

static struct mblock blk(size_t off, size_t usable) {
  struct mblock b = {0};
  b.p = arena + off;
  b.req = usable;
  b.usable = usable;
  b.align = 16;
  return b;
}

static const char *add(struct mblock *where, size_t off, size_t usable) {
  struct mblock b = blk(off, usable);
  return model_add(&m, where, &b);
}

static int refused(const char *why, const char *where_word) {
  return why != NULL && strstr(why, "overlaps the live block") && strstr(why, where_word);
}

/* Every entry of both tables, each holding a block of 64 bytes: a block
 * over any one of them is refused, naming its table; one in a gap is not. */
static void test_every_entry(void) {
  model_init(&m);
  struct mblock *e[PROG_SLOTS + PROG_MAILBOXES];
  for (int i = 0; i < PROG_SLOTS + PROG_MAILBOXES; i++)
    e[i] = i < PROG_SLOTS ? &m.slot[i] : &m.mailbox[i - PROG_SLOTS];
  /* Fill the mailboxes through a slot and a move, as a pass does. */
  for (int i = 0; i < PROG_SLOTS + PROG_MAILBOXES; i++) {
    struct mblock *to = e[i < PROG_SLOTS ? i : 0];
    const char *why = add(to, (size_t)i * 256, 64);
    CHECK(why == NULL, "entry %d: %s", i, why);
    if (i >= PROG_SLOTS) {
      pthread_mutex_lock(&m.lock);
      model_move_locked(&m, e[i], &m.slot[0]);
      pthread_mutex_unlock(&m.lock);
    }
  }
  /* slot 0 held the mailboxes' blocks on their way: refill it. */
  CHECK(add(&m.slot[0], 0, 64) == NULL, "slot 0 refilled");
  for (int i = 0; i < PROG_SLOTS + PROG_MAILBOXES; i++) {
    const char *word = i < PROG_SLOTS ? "slot" : "mailbox";
    /* A block of 16 bytes at the end of entry i's 64, added elsewhere. */
    struct mblock *other = i == 1 ? &m.slot[2] : &m.slot[1];
    struct mblock keep = *other;
    CHECK(refused(add(other, (size_t)i * 256 + 48, 16), word), "an overlap with entry %d (%s) was not seen", i,
          word);
    CHECK(other->p == keep.p, "a refused block replaced entry %s", word);
    CHECK(add(other, (size_t)i * 256 + 128, 64) == NULL, "the gap after entry %d refused", i);
    CHECK(model_add(&m, other, &keep) == NULL, "entry %s restored", word);
  }
}

/* A block moves with its pass and recv; the entries it left are free. */
static void test_moves(void) {
  model_init(&m);
  CHECK(add(&m.slot[3], 0, 1000) == NULL, "first block");
  pthread_mutex_lock(&m.lock);
  model_move_locked(&m, &m.mailbox[5], &m.slot[3]);
  pthread_mutex_unlock(&m.lock);
  CHECK(m.slot[3].p == NULL && m.mailbox[5].p == arena, "pass moved the block");
  CHECK(refused(add(&m.slot[3], 512, 16), "mailbox 5"), "an overlap with a passed block was not seen");
  CHECK(add(&m.slot[3], 1024, 16) == NULL, "the slot a pass emptied refused a block");
  pthread_mutex_lock(&m.lock);
  model_move_locked(&m, &m.slot[20], &m.mailbox[5]);
  pthread_mutex_unlock(&m.lock);
  CHECK(refused(add(&m.slot[21], 0, 16), "slot 20"), "an overlap with a received block was not seen");
  CHECK(add(&m.mailbox[5], 1008, 16) == NULL, "the emptied mailbox refused a block");
  /* In place: the same entry may take a block over its own (realloc). */
  CHECK(add(&m.slot[20], 0, 1008) == NULL, "a block refused its own entry's bytes");
  struct mblock b = model_take(&m, &m.slot[20]);
  CHECK(b.p == arena && m.slot[20].p == NULL, "take");
  CHECK(add(&m.slot[21], 0, 16) == NULL, "a taken block's bytes still refused");
  /* An entry emptied by hand, as a corruption case does (fuzz/corrupt.c). */
  m.slot[21].p = NULL;
  CHECK(add(&m.slot[22], 0, 16) == NULL, "an entry emptied by hand still refused its bytes");
  /* A zero-sized block still has an address. */
  CHECK(add(&m.slot[23], 4096, 0) == NULL, "zero-sized block");
  CHECK(refused(add(&m.slot[24], 4096, 16), "slot 23"), "a block over a zero-sized one was not seen");
  CHECK(add(&m.slot[24], 4112, 16) == NULL, "the byte after a zero-sized block refused");
}

static void test_shape(void) {
  model_init(&m);
  struct mblock b = blk(8, 16);
  CHECK(model_add(&m, &m.slot[0], &b) != NULL, "an 8-aligned block accepted");
  b = blk(64, 100);
  b.align = 128;
  CHECK(model_add(&m, &m.slot[0], &b) != NULL, "a block off its 128 alignment accepted");
  b = blk(0, 100);
  b.req = 101;
  CHECK(model_add(&m, &m.slot[0], &b) != NULL, "usable below the request accepted");
  CHECK(m.slot[0].p == NULL && m.live[0] == 0, "a refused block was recorded");
}

/* The first wrong byte is named at every position of a block that spans
 * several pages, and a block that holds what it should passes. */
static void test_verify(void) {
  static unsigned char buf[3 * 4096 + 17];
  struct mblock b = {0};
  b.p = buf;
  b.req = b.usable = sizeof buf;
  model_fill(&b, 0xa5);
  CHECK(model_verify(&b) == NULL, "a filled block failed its check");
  char want[64];
  for (size_t k = 0; k < sizeof buf; k += k < 40 ? 1 : 997) {
    buf[k] = 0xa4;
    const char *why = model_verify(&b);
    snprintf(want, sizeof want, "byte %zu of", k);
    CHECK(why && strncmp(why, want, strlen(want)) == 0, "byte %zu changed: %s", k, why ? why : "not seen");
    buf[k] = 0xa5;
  }
  buf[sizeof buf - 1] = 0;
  CHECK(model_verify(&b) != NULL, "the last byte changed was not seen");
  buf[sizeof buf - 1] = 0xa5;
  for (size_t k = 1; k < sizeof buf; k += 2) buf[k] = 0x5a; /* a stride, as a wrong 16-bit copy leaves */
  CHECK(model_verify(&b) != NULL, "every odd byte changed was not seen");
  memset(buf, 0, sizeof buf);
  b.content = C_ZERO;
  CHECK(model_verify(&b) == NULL, "a zeroed block failed its check");
  buf[4096] = 1;
  CHECK(model_verify(&b) != NULL, "a non-zero byte of a zeroed block was not seen");
  b.valid = 0;
  CHECK(model_verify(&b) == NULL, "an empty range failed its check");
  b.valid = 4096;
  CHECK(model_verify(&b) == NULL, "a byte past the known range was checked");
}

int main(void) {
  test_every_entry();
  test_moves();
  test_shape();
  test_verify();
  return test_done("unit_model");
}
