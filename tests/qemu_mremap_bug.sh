#!/usr/bin/env bash
# The QEMU 7.2 -R (reserved_va) mremap bug (qemu-targets/README.md, "Known
# QEMU bugs"), shown by qemu-targets/bugs/mremap_reserved_va.c: a failed
# mremap(MREMAP_MAYMOVE) leaves the caller's block PROT_NONE.
#   - natively (x86_64) and under qemu-aarch64 without -R: the block is
#     intact after the refused grow;
#   - under qemu-aarch64 -R with qemu-targets/aarch64's RESERVED_VA (what
#     the aarch64 libFuzzer/ASan runs use, 512 GiB less a page): the read
#     faults.  The test asserts that the bug is still
#     there: the day QEMU is fixed it fails, saying the workarounds can go;
#   - under -R too, the same grow with MREMAP_FIXED | MREMAP_MAYMOVE, and a
#     grow in place (flags 0), leave the block intact.
# Exit 77 (skipped) only when qemu-aarch64 or the aarch64 cross compiler is
# missing.  About 1 s.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
src=qemu-targets/bugs/mremap_reserved_va.c
out=$BUILD/tests/qemu_mremap_bug
mkdir -p "$out"
command -v qemu-aarch64 >/dev/null ||
  { echo "skipped: qemu-aarch64 not found: install the Debian package qemu-user"; exit 77; }
command -v aarch64-linux-gnu-gcc >/dev/null ||
  { echo "skipped: aarch64-linux-gnu-gcc not found: install the Debian package gcc-aarch64-linux-gnu"; exit 77; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! aarch64-linux-gnu-gcc -static -O1 -Wall -Wextra -o "$out/mremap_reserved_va-aarch64" "$src" >"$out/build.log" 2>&1; then
  cat "$out/build.log"
  echo "FAIL: the static aarch64 build failed (static libc: the Debian package libc6-dev-arm64-cross)"
  exit 1
fi
${CC:-gcc} -O1 -Wall -Wextra -o "$out/mremap_reserved_va-native" "$src" >>"$out/build.log" 2>&1 ||
  { cat "$out/build.log"; echo "FAIL: the native build failed"; exit 1; }
bin=$out/mremap_reserved_va-aarch64

# run NAME COMMAND...: its status in rc, its output in $out/NAME.log.
run() {
  local name=$1
  shift
  { timeout -k 5 60 "$@" >"$out/$name.log" 2>&1; } 2>/dev/null
  rc=$?
}
# intact NAME MODE: the run said ENOMEM (or, in place, anything) and intact.
intact() {
  if [ $rc -ne 0 ] || ! grep -q "^$2: intact\$" "$out/$1.log"; then
    bad "$1: the block should read back intact (exit $rc): $(tr '\n' ' ' <"$out/$1.log")"
  elif [ "$2" != inplace ] && ! grep -q "^$2: mremap to .*: Cannot allocate memory; " "$out/$1.log"; then
    bad "$1: mremap should have failed with ENOMEM: $(tr '\n' ' ' <"$out/$1.log")"
  fi
}

run native "$out/mremap_reserved_va-native"
intact native maymove
run qemu qemu-aarch64 "$bin"
intact qemu maymove

rv=$(sed -n 's/^RESERVED_VA=//p' qemu-targets/aarch64)
R=(qemu-aarch64 -R "$rv")
run qemu-R "${R[@]}" "$bin"
if [ $rc -eq 0 ] && grep -q '^maymove: intact$' "$out/qemu-R.log"; then
  bad "the bug is gone: $(qemu-aarch64 --version | head -n1) keeps the block after a failed mremap(MREMAP_MAYMOVE) under -R.
      Update qemu-targets/README.md (Known QEMU bugs), fuzz/triage.sh (the emulator class) and this test;
      the workaround in vigil's large-block realloc can go"
elif [ $rc -ne 139 ] || ! grep -q 'uncaught target signal 11' "$out/qemu-R.log" ||
     ! grep -q '^maymove: mremap to .*: Cannot allocate memory; reading the block$' "$out/qemu-R.log"; then
  bad "under -R: expected ENOMEM, then SIGSEGV on the read (exit 139); got exit $rc: $(tr '\n' ' ' <"$out/qemu-R.log")"
fi
for mode in fixed inplace; do
  run "qemu-R-$mode" "${R[@]}" "$bin" $mode
  intact "qemu-R-$mode" $mode
done

[ $fail -eq 0 ] || exit 1
echo "qemu_mremap_bug: native and qemu-aarch64: intact after the refused grow; -R $rv: $(grep -o 'uncaught target signal 11[^-]*' "$out/qemu-R.log" | sed 's/ *$//') (the bug is still there)"
echo "qemu_mremap_bug: under -R, MREMAP_FIXED|MREMAP_MAYMOVE and a grow in place leave the block intact"
