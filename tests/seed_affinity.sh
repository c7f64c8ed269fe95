#!/usr/bin/env bash
# Seed 001: the arena count must not follow the CPU affinity mask.
#
# glibc 2.34-2.38 sized its arena pool from sched_getaffinity(), so a process
# pinned to one CPU with many threads shared a handful of arenas and ran ~30x
# slower.  vigil counts the CPUs the system has (/sys/devices/system/cpu/possible).
#
# A small program linked with $BUILD/libvigil.so starts 24 threads that each
# malloc/free a little (so every arena gets created), joins them and prints
# malloc_info() (vigil's, whose XML has <vigil-arenas count=".." created=".."/>).
# It runs plainly and under `taskset -c 0`, and the test asserts:
#   count(plain) == count(pinned) == number of CPUs in .../cpu/possible
#   created(plain) == created(pinned)
# Negative control: the same program built with -DAFFINITY_CONTROL prints,
# in the same format, the count an affinity-based allocator would use
# (CPU_COUNT of sched_getaffinity); the same comparison must FAIL on it.
# Exit: 0 pass, 77 skip (one possible CPU, or already pinned to one), 1 fail.
set -euo pipefail
BUILD=${BUILD:-build}
CC=${CC:-gcc}
unset VIGIL_OPTIONS   # arena_max would change the count legitimately

lib=$BUILD/libvigil.so
[ -f "$lib" ] || { echo "FAIL: $lib not found (run make first)"; exit 1; }
command -v taskset >/dev/null || { echo "FAIL: taskset missing (Debian package util-linux)"; exit 1; }

# Number of CPUs in a list such as "0-1,4".
count_cpus() {
  local n=0 part
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then n=$((n + ${part#*-} - ${part%-*} + 1)); else n=$((n + 1)); fi
  done
  echo "$n"
}
possible=$(count_cpus "$(tr -d ' \n' </sys/devices/system/cpu/possible)")
if [ "$possible" -le 1 ]; then
  echo "skipped: only one possible CPU, pinning cannot change anything here"
  exit 77
fi
if [ "$(nproc)" -le 1 ]; then
  echo "skipped: this process is already pinned to one CPU (nproc=1), the control could not differ"
  exit 77
fi

mkdir -p "$BUILD/tests"
T=$(mktemp -d "${TMPDIR:-/tmp}/vigil-affinity.XXXXXX")
trap 'rm -rf "$T"' EXIT
cat >"$T/affinity_probe.c" <<'EOF'
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 24
static pthread_barrier_t all_alive; /* every thread holds its heap at once */

static void *work(void *arg) {
  void *p[64];
  for (int i = 0; i < 64; i++) {
    p[i] = malloc(16 + (size_t)i * 24);
    if (p[i] == NULL) abort();
    memset(p[i], (int)(long)arg, 16);
  }
  pthread_barrier_wait(&all_alive);
  for (int i = 0; i < 64; i++) free(p[i]);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  pthread_barrier_init(&all_alive, NULL, THREADS);
  for (long i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, work, (void *)i) != 0) return 2;
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
#ifdef AFFINITY_CONTROL
  /* What glibc 2.34-2.38 based its arena count on. */
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 3;
  printf("<vigil-arenas count=\"%d\" created=\"%d\" cpus=\"-\"/>\n", CPU_COUNT(&set), CPU_COUNT(&set));
#else
  malloc_info(0, stdout);
#endif
  return 0;
}
EOF
prog=$BUILD/tests/affinity_probe          # not seed_*: run.sh would take it for a test
ctl=$BUILD/tests/affinity_probe_control
rpath=$(cd "$BUILD" && pwd)
$CC -std=gnu11 -O1 -pthread -o "$prog" "$T/affinity_probe.c" "$lib" -Wl,-rpath,"$rpath"
$CC -std=gnu11 -O1 -pthread -DAFFINITY_CONTROL -o "$ctl" "$T/affinity_probe.c" "$lib" -Wl,-rpath,"$rpath"

# Prints "count created" from a run's output, or fails naming the run.
arenas() {
  local out
  out=$("$@") || { echo "FAIL: '$*' exited with status $?" >&2; return 1; }
  sed -n 's/.*<vigil-arenas count="\([0-9]*\)" created="\([0-9]*\)".*/\1 \2/p' <<<"$out" | grep . ||
    { echo "FAIL: no <vigil-arenas count created> line in the output of '$*' (is it vigil's malloc_info?):" >&2
      echo "$out" | head -5 >&2; return 1; }
}

# compare LABEL: runs program $1 plain and pinned; 0 when the invariants hold.
compare() {
  local bin=$1 label=$2 plain pinned pc pcr qc qcr ok=0
  plain=$(arenas "$bin") || return 2
  pinned=$(arenas taskset -c 0 "$bin") || return 2
  read -r pc pcr <<<"$plain"
  read -r qc qcr <<<"$pinned"
  echo "$label: plain count=$pc created=$pcr; taskset -c 0 count=$qc created=$qcr; possible CPUs=$possible"
  [ "$pc" = "$qc" ] || { echo "  count differs when pinned ($pc vs $qc)"; ok=1; }
  [ "$pc" = "$possible" ] || { echo "  count $pc is not the number of possible CPUs ($possible)"; ok=1; }
  [ "$pcr" = "$qcr" ] || { echo "  created differs when pinned ($pcr vs $qcr)"; ok=1; }
  return $ok
}

rc=0
compare "$prog" vigil || rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: vigil's arena count must be the possible CPUs, whatever the affinity mask (seed 001)"; exit 1; fi
echo "ok: vigil's arena count ignores the affinity mask"

rc=0
compare "$ctl" control || rc=$?
case $rc in
  1) echo "ok: the control (sched_getaffinity count) fails the same comparison: the test can catch seed 001" ;;
  0) echo "FAIL: the control passed the comparison, so the test cannot tell affinity-based counting apart"; exit 1 ;;
  *) echo "FAIL: the control program did not run"; exit 1 ;;
esac
echo "PASS"
