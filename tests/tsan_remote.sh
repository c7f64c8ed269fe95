#!/usr/bin/env bash
# Seed 002: vigil's remote free under ThreadSanitizer.  A lock-free list needs
# explicit C11 orders: the freeing thread pushes with a release CAS, the owner
# takes the whole list with an acquire exchange (src/heap.c,
# vg_heap_free_remote and vg_heap_drain).
#
# src/*.c (the Makefile's CFLAGS_LIB with OPT=-O1, plus -fsanitize=thread and
# -DVIGIL_PREFIX) and tests/tsan_stress.c are built with clang into
# $BUILD/tsan/, then:
#   1. `tsan_stress remote`: 4 producer/consumer pairs, remote frees of
#      16..2048-byte blocks, producers exiting with blocks in flight, trim and
#      mallinfo2 on the side: must exit 0 with no TSan report; and the same
#      at harden=1 and harden=2 (src/harden.c: other free paths);
#   2. control: the same, built from a temporary copy of src/ whose heap.c has
#      the push CAS's release and the drain exchange's acquire turned into
#      relaxed: TSan MUST report a data race (else this test proves nothing);
#   3. `tsan_stress publish`: mallinfo2/malloc_trim in a thread that learns of
#      a new arena only through a relaxed flag: must be clean (the arena table
#      has to be published with release/acquire).
# TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1; setarch -R is used
# only when a trivial TSan program cannot start without it.  The tree is not
# modified.  Logs: $BUILD/tsan/*.log.
# Exit: 0 pass, 1 fail.
set -euo pipefail
BUILD=${BUILD:-build}
root=$(pwd)
mkdir -p "$BUILD/tsan"
out=$(cd "$BUILD/tsan" && pwd)
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
SAN=-fsanitize=thread
T=$(mktemp -d "${TMPDIR:-/tmp}/vigil-tsan.XXXXXX")
trap 'rm -rf "$T"' EXIT

# --- toolchain ------------------------------------------------------------------
command -v clang >/dev/null || { echo "FAIL: clang not found: install the Debian packages clang and libclang-rt-14-dev"; exit 1; }
echo 'int main(void) { return 0; }' >"$T/probe.c"
if ! clang $SAN "$T/probe.c" -o "$T/probe" 2>"$T/probe.err"; then
  cat "$T/probe.err"
  echo "FAIL: clang cannot link a -fsanitize=thread program: install the Debian packages clang and libclang-rt-14-dev"
  exit 1
fi
run=()
if ! "$T/probe" >"$T/probe.out" 2>&1; then
  if setarch "$(uname -m)" -R "$T/probe" >/dev/null 2>&1; then
    run=(setarch "$(uname -m)" -R)
    echo "note: TSan programs need ASLR off on this kernel ($(head -1 "$T/probe.out")): using setarch -R"
  else
    cat "$T/probe.out"; echo "FAIL: a trivial TSan program does not run, even under setarch -R"; exit 1
  fi
fi

# --- builds ---------------------------------------------------------------------
# shellcheck disable=SC2016  # $(CFLAGS_LIB) is make's, not the shell's
cflags=$(make -s --no-print-directory --eval='vg-print-cflags: ; @echo $(CFLAGS_LIB)' vg-print-cflags CC=clang OPT=-O1)
[ -n "$cflags" ] || { echo "FAIL: could not read CFLAGS_LIB from the Makefile"; exit 1; }
# build SRCDIR DEST: objects of SRCDIR/*.c and DEST/tsan_stress.
build() {
  local src=$1 dest=$2
  rm -rf "$dest/obj" && mkdir -p "$dest/obj"
  # shellcheck disable=SC2086  # $cflags is a word list
  if ! (cd "$dest/obj" && clang $cflags $SAN -DVIGIL_PREFIX -c "$src"/*.c) >"$dest/build.log" 2>&1 ||
     ! clang -std=gnu11 -O1 -g -pthread -Wall -Wextra $SAN -DVIGIL_PREFIX -I"$src" \
         -o "$dest/tsan_stress" "$root/tests/tsan_stress.c" "$dest"/obj/*.o >>"$dest/build.log" 2>&1; then
    cat "$dest/build.log"; echo "FAIL: TSan build of $src failed"; exit 1
  fi
}
build "$root/src" "$out"

mkdir -p "$T/src" && cp -p "$root"/src/* "$T/src/"
sed -i -e '/compare_exchange.*&o->remote/s/memory_order_release/memory_order_relaxed/' \
       -e '/atomic_exchange_explicit(&h->remote, 0,/s/memory_order_acquire/memory_order_relaxed/' "$T/src/heap.c"
changed=$(diff "$root/src/heap.c" "$T/src/heap.c" | grep -c '^>' || true)
if [ "$changed" != 2 ]; then
  echo "FAIL: control: expected to weaken 2 lines of src/heap.c (push CAS release, drain exchange acquire), changed $changed;"
  echo "      update the sed patterns in $0 to the current code"
  exit 1
fi
build "$T/src" "$out/mutant"

# --- runs -----------------------------------------------------------------------
# tsan NAME BINARY ARGS...: runs it; sets rc and log.
tsan() {
  log=$out/$1.log; shift
  rc=0
  timeout 120 "${run[@]}" "$@" >"$log" 2>&1 || rc=$?
}
report() { # the first TSan report of $log: the two accesses and the summary
  awk '/WARNING: ThreadSanitizer/ {on = 1} on && /^  (Location|Mutex|Thread|As if)/ {on = 0}
       on && !/^ *#([4-9]|[1-9][0-9])/ && NF {print} /^SUMMARY/ {print; exit}' "$log" |
    sed -E 's/ \(BuildId: [0-9a-f]+\)//; s/ \([^ ]+\+0x[0-9a-f]+\)//'
}
fail=0

tsan remote "$out/tsan_stress" remote 40 3000
if [ $rc -eq 0 ] && ! grep -q 'WARNING: ThreadSanitizer' "$log"; then
  echo "remote frees: clean: $(grep 'tsan_stress remote' "$log")"
else
  echo "FAIL: remote frees: exit $rc:"; report; grep -v '^ ' "$log" | grep -v '^==' | tail -5; fail=1
fi

# The same at the hardening levels whose frees take other paths: the
# thread cache as a FIFO (1), the quarantine before it (2).
for level in 1 2; do
  VIGIL_OPTIONS=harden=$level tsan "remote-harden$level" "$out/tsan_stress" remote 40 3000
  if [ $rc -eq 0 ] && ! grep -q 'WARNING: ThreadSanitizer' "$log"; then
    echo "remote frees at harden=$level: clean"
  else
    echo "FAIL: remote frees at harden=$level: exit $rc:"; report; grep -v '^ ' "$log" | grep -v '^==' | tail -5; fail=1
  fi
done

tsan control "$out/mutant/tsan_stress" remote 40 3000
if grep -q 'WARNING: ThreadSanitizer: data race' "$log"; then
  echo "control (release/acquire -> relaxed): TSan reports it: $(grep -m1 '^SUMMARY' "$log" | sed 's/ (.*)//')"
else
  echo "FAIL: control: weakened orders went unnoticed (exit $rc): this test cannot catch seed 002"; tail -5 "$log"; fail=1
fi

tsan publish "$out/tsan_stress" publish
if [ $rc -eq 0 ] && ! grep -q 'WARNING: ThreadSanitizer' "$log"; then
  echo "arena publication vs mallinfo2/malloc_trim: clean"
else
  echo "FAIL: arena publication: mallinfo2/malloc_trim read the arena table unsynchronised with arena creation (exit $rc):"
  report; fail=1
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
