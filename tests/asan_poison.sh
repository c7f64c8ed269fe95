#!/usr/bin/env bash
# ASan sees inside vigil's heap.  In the prefixed build compiled with ASan
# (as the libFuzzer targets and `make triage`'s ASan row build it), vigil
# poisons free slots, freed spans and the tails of blocks (src/annotate.h).
# tests/asan_poison.c makes one error per case; each must stop with ASan's
# "use-after-poison" report at the program's own line, and the same program
# built with -DVIGIL_NO_POISON must run to the end without a report: so the
# report comes from the poisoning.  The clean case must run clean.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CLANG=${FUZZ_CLANG:-clang}
command -v "$CLANG" >/dev/null || { echo "FAIL: $CLANG missing (Debian packages clang, libclang-rt-14-dev)"; exit 1; }
out=$BUILD/asan-poison
mkdir -p "$out"
for v in poison nopoison; do
  flags=()
  [ $v = nopoison ] && flags=(-DVIGIL_NO_POISON)
  "$CLANG" -std=gnu11 -O1 -g -fsanitize=address -fno-omit-frame-pointer -pthread -DVIGIL_PREFIX -DVIGIL_NO_SDT \
    "${flags[@]}" -Isrc -o "$out/$v" tests/asan_poison.c src/*.c
done
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# case:the statement that makes the error (its line is where ASan must stop)
for c in 'use-after-free:sink = p\[8\]' 'overflow:p\[24\] = 7' 'span-use-after-free:sink = s\[50000\]'; do
  name=${c%%:*}
  line=$(grep -n "${c#*:}" tests/asan_poison.c | cut -d: -f1)
  rc=0
  "$out/poison" "$name" >"$out/$name.log" 2>&1 || rc=$?
  if [ $rc -ne 66 ] || ! grep -q 'ERROR: AddressSanitizer: use-after-poison' "$out/$name.log"; then
    fail "$name: exit $rc, no use-after-poison report ($out/$name.log)"; continue
  fi
  if ! grep -m1 -A2 'ERROR: AddressSanitizer' "$out/$name.log" | grep -q "main .*asan_poison.c:$line"; then
    fail "$name: the report's first frame is not asan_poison.c:$line ($out/$name.log)"; continue
  fi
  rc=0
  "$out/nopoison" "$name" >"$out/$name-nopoison.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || grep -q AddressSanitizer "$out/$name-nopoison.log"; then
    fail "$name: the control without poisoning exited $rc ($out/$name-nopoison.log)"; continue
  fi
  echo "ok $name: ASan reports use-after-poison at asan_poison.c:$line; unseen without the poisoning"
done
rc=0
"$out/poison" clean >"$out/clean.log" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q finished "$out/clean.log" && echo "ok clean: no report" || fail "clean: exit $rc ($out/clean.log)"
[ $fails -eq 0 ] || exit 1
echo "asan_poison: ASan sees use-after-free and overflow inside vigil's heap"
