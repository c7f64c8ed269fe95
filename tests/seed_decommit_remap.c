/* Seed 000: MADV_DONTNEED does not lower the commit charge, which matters
 * under overcommit_memory=2.  With decommit=remap (chosen automatically
 * under strict overcommit) vigil returns free pages by mapping PROT_NONE
 * over them: the kernel then no longer accounts them ("ac" leaves the VMA's
 * VmFlags).  With decommit=madvise the pages stay accounted.  The same
 * program re-runs itself in each mode and reads /proc/self/smaps. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

struct vma {
  char perms[8];
  int accounted;
};

/* The smaps entry of the mapping that contains addr. */
static int find_vma(uintptr_t addr, struct vma *v) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  char line[512];
  int in = 0, found = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && strchr(line, '-') < strchr(line, ' ')) {
      if (found) break;
      in = addr >= lo && addr < hi;
      if (in) {
        found = 1;
        memcpy(v->perms, perms, sizeof perms);
        v->accounted = 0;
      }
    } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      v->accounted = strstr(line, " ac") != NULL;
    }
  }
  fclose(f);
  return found;
}

static int child(const char *mode) {
  int remap = strcmp(mode, "remap") == 0;
  mallopt(M_MMAP_THRESHOLD, 1 << 20); /* 256 KiB blocks are spans, in segments */
  mallopt(M_TRIM_THRESHOLD, 0);        /* free pages go back at once */
  enum { N = 8, SZ = 256 << 10 };
  char *b[N];
  for (int i = 0; i < N; i++) {
    b[i] = malloc(SZ);
    REQUIRE(b[i], "malloc");
    memset(b[i], 0x77, SZ);
  }
  /* b[0] stays: its segment must stay mapped for the check to mean
   * anything (a wholly free segment is unmapped instead). */
  uintptr_t probe = (uintptr_t)b[N / 2] + 4096;
  for (int i = 1; i < N; i++) free(b[i]);
  struct vma v;
  REQUIRE(find_vma(probe, &v), "no mapping at the freed block");
  printf("%s: freed pages: %s accounted=%d\n", mode, v.perms, v.accounted);
  unsigned char vec[SZ / 4096];
  size_t resident = 0, ps = (size_t)sysconf(_SC_PAGESIZE);
  REQUIRE(mincore((void *)(probe - 4096), SZ, vec) == 0, "mincore");
  for (size_t i = 0; i < SZ / ps; i++) resident += vec[i] & 1;
  CHECK(resident == 0, "%s: %zu freed pages still resident", mode, resident);
  if (remap) {
    CHECK(strcmp(v.perms, "---p") == 0, "remap: freed pages are %s, want ---p", v.perms);
    CHECK(!v.accounted, "remap: freed pages still carry the commit charge");
  } else {
    CHECK(strcmp(v.perms, "rw-p") == 0, "madvise: freed pages are %s", v.perms);
    CHECK(v.accounted, "madvise: expected the pages to stay accounted (what remap is for)");
  }
  /* The memory comes back when needed: commit on reuse. */
  for (int i = 1; i < N; i++) {
    b[i] = malloc(SZ);
    REQUIRE(b[i], "malloc after decommit");
    memset(b[i], 0x11, SZ);
  }
  for (int i = 0; i < N; i++) free(b[i]);
  char *xml = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&xml, &len);
  malloc_info(0, m);
  fclose(m);
  char want[64];
  snprintf(want, sizeof want, "<vigil-decommit mode=\"%s\"/>", mode);
  CHECK(strstr(xml, want) != NULL, "malloc_info does not say %s", want);
  free(xml);
  return test_done(mode);
}

int main(int argc, char **argv) {
  if (argc > 1) return child(argv[1]);
  const char *modes[] = {"madvise", "remap"};
  for (int i = 0; i < 2; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      char opt[64];
      snprintf(opt, sizeof opt, "VIGIL_OPTIONS=decommit=%s", modes[i]);
      putenv(opt);
      execl("/proc/self/exe", argv[0], modes[i], (char *)NULL);
      _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s run failed (status %d)", modes[i], st);
  }
  return test_done("seed_decommit_remap");
}
