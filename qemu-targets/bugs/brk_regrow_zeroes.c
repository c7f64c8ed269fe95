/* QEMU 7.2 linux-user: a brk that grows back over a range it had before is
 * zeroed, all of it, by QEMU itself (it never unmaps what brk shrinks
 * from, and clears the whole regrown range), so every page of it becomes
 * resident: 2.3 s and 1 GiB of RSS per GiB here, where natively the regrow
 * costs nothing and touches nothing.  glibc serves big blocks from brk when
 * M_MMAP_THRESHOLD is raised, so an options input that frees (and trims)
 * a 20 GiB block and asks for it again spent 50 s in the kernel under
 * qemu-s390x (qemu-targets/README.md, "Known QEMU bugs";
 * tests/qemu_brk_regrow.sh).
 *
 *   brk_regrow_zeroes [MIB]    (default 1024)
 *
 * Grows the brk by MIB MiB, shrinks it back, grows it again, touching
 * nothing, and prints the process's peak resident set in MiB after each
 * step (getrusage: under QEMU, QEMU's own, which holds the guest's). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static long peak_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

int main(int argc, char **argv) {
  intptr_t n = (intptr_t)(argc > 1 ? atol(argv[1]) : 1024) << 20;
  if (sbrk(n) == (void *)-1) return perror("sbrk: grow"), 2;
  long grown = peak_mib();
  if (sbrk(-n) == (void *)-1) return perror("sbrk: shrink"), 2;
  if (sbrk(n) == (void *)-1) return perror("sbrk: grow again"), 2;
  printf("peak RSS: %ld MiB after the grow, %ld MiB after the grow back\n", grown, peak_mib());
  return 0;
}
