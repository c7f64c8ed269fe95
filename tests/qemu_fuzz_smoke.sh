#!/usr/bin/env bash
# `make qemu-fuzz` in CI, briefly and the same every time: the fuzz drivers
# on the targets the user named, aarch64 (coverage-guided libFuzzer,
# ASan+UBSan, under qemu-aarch64 -R) and ppc64le (the replay main's mutation
# mode under qemu-ppc64le -p 65536), on api and threads, each run a fixed
# number of executions from a fixed seed and the seeds alone (EXECS= SEED=:
# libFuzzer -seed -runs from an empty corpus, replay -M -s -r), so that a
# commit runs the same inputs every time and the smoke cannot fail at random
# (qemu-targets/README.md).  The one exception is the threads target under
# libFuzzer: which of its inputs add coverage depends on thread timing, so
# its inputs can part from one run to the next after the first few.  Every
# run must end "ok" with exactly its count; a crash is a real finding (the
# table names the saved file and the commands that reproduce it).  30-40 s
# once built.  The long, timed campaign is `make qemu-fuzz SECONDS=`.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
SEED=1
# Counts for 5-10 s a run here (2 cores; threads under libFuzzer 6-20 s):
# libFuzzer under QEMU and ASan makes 3-12 exec/s, the mutation driver on
# ppc64le 40-100.
declare -A EXECS=([aarch64]=60 [ppc64le]=400) ENGINE=([aarch64]=libfuzzer [ppc64le]=mutate)
log=$BUILD/tests/qemu_fuzz_smoke
mkdir -p "$log"
fail=0
for arch in aarch64 ppc64le; do
  env -u MAKEFLAGS make -s --no-print-directory BUILD="$BUILD" qemu-fuzz EXECS="${EXECS[$arch]}" SEED=$SEED \
    ARCHES=$arch FUZZ_TARGETS="api threads" >"$log/$arch.log" 2>&1
  rc=$?
  bad=0
  for t in api threads; do
    if ! grep -qE "^$arch +$t +${ENGINE[$arch]} +[0-9]+ +${EXECS[$arch]} +[0-9-]+ +0 +ok\$" "$log/$arch.log"; then
      echo "FAIL: $arch/$t (${ENGINE[$arch]}) did not run its ${EXECS[$arch]} executions clean (seed $SEED)"
      bad=1
    fi
  done
  if [ $rc -ne 0 ] || [ $bad -ne 0 ]; then
    fail=1
    echo "make qemu-fuzz EXECS=${EXECS[$arch]} SEED=$SEED ARCHES=$arch exited $rc:"
    sed -n '/^arch /,$p' "$log/$arch.log"
    [ -n "$(sed -n '/^arch /p' "$log/$arch.log")" ] || tail -n 30 "$log/$arch.log"
  fi
done
[ $fail -eq 0 ] || exit 1
sed -n '/^arch /p' "$log/aarch64.log"
for arch in aarch64 ppc64le; do sed -n "/^$arch /p" "$log/$arch.log"; done
echo "qemu_fuzz_smoke: libFuzzer on aarch64 (${EXECS[aarch64]} execs a run) and the mutation driver on ppc64le (${EXECS[ppc64le]}) ran clean from seed $SEED"
