#!/usr/bin/env bash
# The sanitizers see inside vigil's heap.  In the prefixed build compiled
# with ASan (as the libFuzzer targets and `make triage`'s ASan row build it),
# vigil poisons free slots, freed spans, freed mapped blocks that its cache
# keeps and the tails of blocks; compiled
# with MSan (OSS-Fuzz's memory sanitizer), it marks each new block
# uninitialised, and calloc's zeroed (src/annotate.h).
# tests/asan_poison.c makes one error per case; each must stop with the
# sanitizer's report ("use-after-poison", "use-of-uninitialized-value") at
# the program's own line, and the same program built with -DVIGIL_NO_POISON
# must run to the end without a report: so the report comes from vigil's
# annotations.  Before ASan's report, vigil's must describe the block the
# address is in or just after, with the stacks of its allocation and free
# (src/history.c): ASan keeps those only for its own allocator's blocks.  The clean case, every path of a block's life, must run clean
# under both; so must large-shrink (an address vigil gave back is clean for
# the next owner), large-reuse (a freed mapped block handed out again is
# addressable past the part a free poisons) and, under ASan, mapping-clear (a range vigil maps comes
# out addressable whatever shadow was left there).
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
# where the sanitizer must stop)|for ASan, vigil's description of the block
# (src/history.c)|the statement that freed it (- if live)|the one that
# allocated it
line_of() { grep -n "$1" tests/asan_poison.c | head -n1 | cut -d: -f1; }
for c in 'address|use-after-free|AddressSanitizer: use-after-poison|sink = p\[8\]|is 8 bytes inside the freed 24-byte block|vigil_free(p);|unsigned char \*p = vigil_malloc(24)' \
  'address|overflow|AddressSanitizer: use-after-poison|p\[24\] = 7|is 0 bytes after the live 24-byte block|-|unsigned char \*p = vigil_malloc(24)' \
  'address|span-use-after-free|AddressSanitizer: use-after-poison|sink = s\[50000\]|is 50000 bytes inside the freed 100000-byte block|vigil_free(s);|unsigned char \*p = vigil_malloc(24)' \
  'address|large-use-after-free|AddressSanitizer: use-after-poison|sink = big\[1 << 20\]|is 1048576 bytes inside the freed 2097152-byte block|vigil_free(big);|unsigned char \*big = vigil_malloc((size_t)2 << 20)' \
  'memory|uninit|MemorySanitizer: use-of-uninitialized-value|if (p\[20\] == 1)|||'; do
  IFS='|' read -r san name report stmt desc freed_at alloc_at <<<"$c"
  line=$(line_of "$stmt")
  log=$out/$san-$name.log rc=0
  "$out/$san-poison" "$name" >"$log" 2>&1 || rc=$?
  if [ $rc -ne 66 ] || ! grep -q "$report" "$log"; then
    fail "$san $name: exit $rc, no '$report' report ($log)"; continue
  fi
  if ! grep -m1 -A2 "$report" "$log" | grep -q "main .*asan_poison.c:$line"; then
    fail "$san $name: the report's first frame is not asan_poison.c:$line ($log)"; continue
  fi
  history=""
  if [ -n "$desc" ]; then
    # vigil's history: the block, then its free and allocation stacks,
    # each reaching the program's own line.
    grep -q "^vigil: 0x[0-9a-f]* $desc at 0x" "$log" || { fail "$san $name: no 'vigil: ... $desc' line ($log)"; continue; }
    a=$(line_of "$alloc_at")
    sed -n '/^vigil: allocated at:/,/^[^ ]/p' "$log" | grep -q " in main .*asan_poison.c:$a\$" ||
      { fail "$san $name: vigil's allocation stack does not reach asan_poison.c:$a ($log)"; continue; }
    history=", vigil names the block and its allocation at line $a"
    if [ "$freed_at" != - ]; then
      f=$(line_of "$freed_at")
      sed -n '/^vigil: freed at:/,/^vigil: allocated/p' "$log" | grep -q " in main .*asan_poison.c:$f\$" ||
        { fail "$san $name: vigil's free stack does not reach asan_poison.c:$f ($log)"; continue; }
      history="$history and its free at line $f"
    fi
  fi
  rc=0
  "$out/$san-nopoison" "$name" >"$out/$san-$name-nopoison.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || grep -q Sanitizer "$out/$san-$name-nopoison.log"; then
    fail "$san $name: the control without vigil's annotations exited $rc ($out/$san-$name-nopoison.log)"; continue
  fi
  echo "ok $san $name: ${report#*: } at asan_poison.c:$line$history; unseen without vigil's annotations"
done
for san in address memory; do
  names="clean large-shrink large-reuse"
  [ $san = address ] && names="$names mapping-clear"
  for name in $names; do
    rc=0
    "$out/$san-poison" $name >"$out/$san-$name.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] && grep -q finished "$out/$san-$name.log" && echo "ok $san $name: no report" ||
      fail "$san $name: exit $rc ($out/$san-$name.log)"
  done
done
[ $fails -eq 0 ] || exit 1
echo "asan_poison: ASan sees use-after-free and overflow, MSan an uninitialised read, inside vigil's heap"
