#!/usr/bin/env bash
# Memcheck sees a user program's heap errors while vigil is its malloc.
# tests/valgrind_demo.c makes one error per case; each runs under memcheck
# twice: with vigil built VALGRIND=1 (client requests, src/annotate.h),
# where memcheck must report that error with vigil's frames in the block's
# stack, and with vigil built without them, where the same run must report
# nothing: so the reports come from vigil's annotations, not from memcheck
# intercepting malloc (--soname-synonyms=somalloc=nouserintercepts keeps
# vigil in place).  The "clean" case must be clean with the annotations,
# and the "handoff" case clean under helgrind and drd (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "SKIP: valgrind missing (Debian package valgrind)"; exit 77; }
[ -f /usr/include/valgrind/memcheck.h ] || { echo "SKIP: valgrind headers missing (Debian package valgrind)"; exit 77; }
VBUILD=${VBUILD:-build-valgrind}
PBUILD=${PBUILD:-${BUILD:-build}}
[ "$PBUILD" = "$VBUILD" ] && PBUILD=build
out=$VBUILD/valgrind-demo
mkdir -p "$out"
env -u MAKEFLAGS make -s --no-print-directory VALGRIND=1 BUILD="$VBUILD" "$VBUILD/libvigil.so" >"$out/build.log" 2>&1 ||
  { tail "$out/build.log"; exit 1; }
env -u MAKEFLAGS make -s --no-print-directory BUILD="$PBUILD" "$PBUILD/libvigil.so" >>"$out/build.log" 2>&1 ||
  { tail "$out/build.log"; exit 1; }
for b in "$VBUILD" "$PBUILD"; do
  ${CC:-gcc} -std=gnu11 -O0 -g -pthread -o "$out/demo-$(basename "$b")" tests/valgrind_demo.c \
    -L"$b" -Wl,-rpath,"$PWD/$b" -lvigil
done
memcheck() { # BUILD CASE -> log in $out/<build>-<case>.log; prints the path
  local log="$out/$(basename "$1")-$2.log"
  valgrind --soname-synonyms=somalloc=nouserintercepts --leak-check=full --show-leak-kinds=definite \
    --errors-for-leak-kinds=definite --error-exitcode=99 --num-callers=12 \
    "$out/demo-$(basename "$1")" "$2" >"$log" 2>&1 || true
  echo "$log"
}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
errors() { sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$1" | tail -1; }
# case | what memcheck must say | where the block's stack must be
cases=(
  "overflow|Invalid write of size 1|0 bytes after a block of size 24 alloc'd"
  "use-after-free|Invalid read of size 1|8 bytes inside a block of size 24 free'd"
  "uninitialised|Conditional jump or move depends on uninitialised value|"
  "leak|4,000 bytes in 1 blocks are definitely lost|"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name says where <<<"$c"
  log=$(memcheck "$VBUILD" "$name")
  if ! grep -q "$says" "$log"; then fail "$name: memcheck did not say '$says' ($log)"; continue; fi
  if [ -n "$where" ] && ! grep -q "$where" "$log"; then fail "$name: no '$where' ($log)"; continue; fi
  # The block's stack goes through vigil's malloc (its client request).
  if [ "$name" != uninitialised ] && ! grep -q 'vg_ann_alloc' "$log"; then
    fail "$name: the block's stack does not come from vigil ($log)"; continue
  fi
  plain=$(memcheck "$PBUILD" "$name")
  n=$(errors "$plain")
  if [ "${n:-x}" != 0 ]; then fail "$name: vigil without client requests: memcheck reported ${n:-?} errors, expected 0 ($plain)"; continue; fi
  echo "ok $name: memcheck says '$says'; 0 errors with vigil built without client requests"
done
log=$(memcheck "$VBUILD" clean)
n=$(errors "$log")
[ "${n:-x}" = 0 ] && ! grep -q 'definitely lost' "$log" && echo "ok clean: 0 errors" ||
  fail "clean: ${n:-?} errors ($log)"
# Threads: blocks one thread wrote and freed, handed by vigil to another
# that writes them.  helgrind and drd cannot see vigil's futex locks and
# release/acquire remote-free stacks; the Valgrind build tells them
# (happens-before requests, src/annotate.h), so they must report nothing.
# Built without them, each must report a race at the program's own write.
for tool in helgrind drd; do
  log="$out/$(basename "$VBUILD")-handoff-$tool.log"
  rc=0
  valgrind --tool=$tool --soname-synonyms=somalloc=nouserintercepts --fair-sched=yes --error-exitcode=99 \
    "$out/demo-$(basename "$VBUILD")" handoff >"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then fail "handoff: $tool: exit $rc, $(errors "$log") errors ($log)"; continue; fi
  plain="$out/$(basename "$PBUILD")-handoff-$tool.log"
  valgrind --tool=$tool --soname-synonyms=somalloc=nouserintercepts --fair-sched=yes \
    "$out/demo-$(basename "$PBUILD")" handoff >"$plain" 2>&1 || true
  if ! grep -A3 -E 'Possible data race|Conflicting (load|store)' "$plain" | grep -q 'handoff (valgrind_demo.c:'; then
    fail "handoff: $tool saw no race at the program's write with vigil built without the requests ($plain)"; continue
  fi
  echo "ok handoff: $tool: 0 errors; without vigil's happens-before requests, a race at the program's write"
done
[ $fails -eq 0 ] || exit 1
echo "valgrind_demo: each user error reported with vigil as the allocator; threads hand blocks over without a race report"
