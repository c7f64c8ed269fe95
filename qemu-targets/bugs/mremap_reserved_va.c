/* QEMU 7.2 linux-user with -R (reserved_va): an mremap(MREMAP_MAYMOVE)
 * that fails with ENOMEM still replaces the old mapping with QEMU's
 * PROT_NONE reservation, so the block the caller kept faults on its next
 * read (qemu-targets/README.md, "Known QEMU bugs"; tests/qemu_mremap_bug.sh).
 *
 *   mremap_reserved_va [maymove|fixed|inplace]
 *
 * Maps 2 MiB read-write, writes it, asks mremap for more, and reads the
 * block back where it now is (the old address when mremap failed).
 *   maymove (default, the bug): grow to 125 GiB with MREMAP_MAYMOVE.  More
 *           than the host's RAM and swap, so the host's mremap refuses it
 *           (ENOMEM) while a 512 GiB reserved guest space still has room.
 *   fixed   the same grow with MREMAP_MAYMOVE | MREMAP_FIXED onto a
 *           PROT_NONE range of 125 GiB: fails the same way, no damage.
 *   inplace a grow in place (flags 0) to 16 MiB: under -R always ENOMEM
 *           (the host range after the block is QEMU's reservation), no
 *           damage; it costs about 8 s per GiB of growth there.
 * Exit 0 when the block reads back intact, 1 when its bytes changed, 2 when
 * mremap did not fail as the mode expects (the program then shows nothing).
 * The bug is death by SIGSEGV on the first read. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "maymove";
  size_t old = 2ul << 20, big = 125ul << 30;
  char *p = mmap(NULL, old, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *q;
  if (p == MAP_FAILED) return perror("mmap"), 2;
  memset(p, 0x5a, old);
  if (!strcmp(how, "maymove")) {
    q = mremap(p, old, big, MREMAP_MAYMOVE);
  } else if (!strcmp(how, "fixed")) {
    void *to = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (to == MAP_FAILED) return perror("mmap PROT_NONE"), 2;
    q = mremap(p, old, big, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  } else if (!strcmp(how, "inplace")) {
    q = mremap(p, old, big = 16ul << 20, 0);
  } else {
    return fprintf(stderr, "usage: %s [maymove|fixed|inplace]\n", argv[0]), 2;
  }
  int err = errno;
  if (q != MAP_FAILED && strcmp(how, "inplace"))
    return printf("%s: mremap to %zu GiB succeeded: this host's RAM and swap (or vm.overcommit_memory=1) "
                  "allow it, so nothing is shown\n", how, big >> 30), 2;
  printf("%s: mremap to %zu MiB: %s; reading the block\n", how, big >> 20,
         q == MAP_FAILED ? strerror(err) : "moved or grown");
  fflush(stdout);
  if (q == MAP_FAILED) q = p;
  for (size_t i = 0; i < old; i += 4096)
    if (q[i] != 0x5a) return printf("%s: byte %zu changed\n", how, i), 1;
  printf("%s: intact\n", how);
  return 0;
}
