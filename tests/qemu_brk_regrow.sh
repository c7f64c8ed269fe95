#!/usr/bin/env bash
# QEMU 7.2 zeroes a brk that grows back over its old range (qemu-targets/
# README.md, "Known QEMU bugs"), shown by qemu-targets/bugs/brk_regrow_zeroes.c
# with 512 MiB: natively the grow back leaves the peak RSS small; under
# qemu-s390x (static) it makes the 512 MiB resident.  The test asserts that
# the bug is still there: the day it is not, it fails, saying that
# VIGIL_ORACLE_GLIBC_MAX in qemu-targets/lib.sh can go.  About 2 s.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
command -v qemu-s390x >/dev/null ||
  { echo "skipped: qemu-s390x not found: install the Debian package qemu-user"; exit 77; }
command -v s390x-linux-gnu-gcc >/dev/null ||
  { echo "skipped: s390x-linux-gnu-gcc not found: install the Debian package gcc-s390x-linux-gnu"; exit 77; }
src=qemu-targets/bugs/brk_regrow_zeroes.c
out=$BUILD/tests/qemu_brk_regrow
mkdir -p "$out"
s390x-linux-gnu-gcc -static -O1 -Wall -Wextra -o "$out/brk-s390x" "$src" >"$out/build.log" 2>&1 &&
  ${CC:-gcc} -O1 -Wall -Wextra -o "$out/brk-native" "$src" >>"$out/build.log" 2>&1 ||
  { cat "$out/build.log"; echo "FAIL: the build failed (static s390x libc: the Debian package libc6-dev-s390x-cross)"; exit 1; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# peak NAME COMMAND...: the peak RSS in MiB after the grow back, in $after.
peak() {
  local name=$1 line
  shift
  line=$(timeout -k 5 120 "$@" 512 2>&1)
  after=$(sed -n 's/^peak RSS: [0-9]* MiB after the grow, \([0-9]*\) MiB after the grow back$/\1/p' <<<"$line")
  [ -n "$after" ] || { bad "$name: no result: $line"; after=-1; }
  echo "$name: $line"
}
peak native "$out/brk-native"
[ "$after" -ge 0 ] && [ "$after" -ge 256 ] && bad "natively the grow back made $after MiB resident"
peak qemu-s390x qemu-s390x "$out/brk-s390x"
if [ "$after" -ge 0 ] && [ "$after" -lt 512 ]; then
  bad "the bug is gone: under $(qemu-s390x --version | head -n1) the grow back of 512 MiB left the peak RSS at $after MiB.
      Update qemu-targets/README.md (Known QEMU bugs) and this test; VIGIL_ORACLE_GLIBC_MAX in qemu-targets/lib.sh can go"
fi
exit $fail
