#!/usr/bin/env bash
# The sanitizers see inside vigil's heap.  In the prefixed build compiled
# with ASan (as the libFuzzer targets and `make triage`'s ASan row build it),
# vigil poisons free slots, freed spans and the tails of blocks; compiled
# with MSan (OSS-Fuzz's memory sanitizer), it marks each new block
# uninitialised, and calloc's zeroed (src/annotate.h).
# tests/asan_poison.c makes one error per case; each must stop with the
# sanitizer's report ("use-after-poison", "use-of-uninitialized-value") at
# the program's own line, and the same program built with -DVIGIL_NO_POISON
# must run to the end without a report: so the report comes from vigil's
# annotations.  The clean case, every path of a block's life, must run clean
# under both.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CLANG=${FUZZ_CLANG:-clang}
command -v "$CLANG" >/dev/null || { echo "FAIL: $CLANG missing (Debian packages clang, libclang-rt-14-dev)"; exit 1; }
out=$BUILD/asan-poison
mkdir -p "$out"
for san in address memory; do
  for v in poison nopoison; do
    flags=()
    [ $v = nopoison ] && flags=(-DVIGIL_NO_POISON)
    "$CLANG" -std=gnu11 -O1 -g -fsanitize=$san -fno-omit-frame-pointer -pthread -DVIGIL_PREFIX -DVIGIL_NO_SDT \
      "${flags[@]}" -Isrc -o "$out/$san-$v" tests/asan_poison.c src/*.c
  done
done
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66 MSAN_OPTIONS=abort_on_error=0:exitcode=66
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# sanitizer|case|its report|the statement that makes the error (its line is
# where the sanitizer must stop)
for c in 'address|use-after-free|AddressSanitizer: use-after-poison|sink = p\[8\]' \
  'address|overflow|AddressSanitizer: use-after-poison|p\[24\] = 7' \
  'address|span-use-after-free|AddressSanitizer: use-after-poison|sink = s\[50000\]' \
  'memory|uninit|MemorySanitizer: use-of-uninitialized-value|if (p\[20\] == 1)'; do
  IFS='|' read -r san name report stmt <<<"$c"
  line=$(grep -n "$stmt" tests/asan_poison.c | cut -d: -f1)
  log=$out/$san-$name.log rc=0
  "$out/$san-poison" "$name" >"$log" 2>&1 || rc=$?
  if [ $rc -ne 66 ] || ! grep -q "$report" "$log"; then
    fail "$san $name: exit $rc, no '$report' report ($log)"; continue
  fi
  if ! grep -m1 -A2 "$report" "$log" | grep -q "main .*asan_poison.c:$line"; then
    fail "$san $name: the report's first frame is not asan_poison.c:$line ($log)"; continue
  fi
  rc=0
  "$out/$san-nopoison" "$name" >"$out/$san-$name-nopoison.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || grep -q Sanitizer "$out/$san-$name-nopoison.log"; then
    fail "$san $name: the control without vigil's annotations exited $rc ($out/$san-$name-nopoison.log)"; continue
  fi
  echo "ok $san $name: ${report#*: } at asan_poison.c:$line; unseen without vigil's annotations"
done
for san in address memory; do
  rc=0
  "$out/$san-poison" clean >"$out/$san-clean.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] && grep -q finished "$out/$san-clean.log" && echo "ok $san clean: no report" ||
    fail "$san clean: exit $rc ($out/$san-clean.log)"
done
[ $fails -eq 0 ] || exit 1
echo "asan_poison: ASan sees use-after-free and overflow, MSan an uninitialised read, inside vigil's heap"
