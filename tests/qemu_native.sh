#!/usr/bin/env bash
# `make qemu-check NATIVE=1` (the matrix on a real host of the arch, no QEMU):
# on this x86_64 host the i686 build runs natively, so NATIVE=1 ARCHES=i686
# must pass with no qemu process involved; and NATIVE=1 ARCHES=aarch64 must
# fail saying the host cannot run it (proof that the mode does not fall back
# to QEMU, which would make a "native" result meaningless).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
log=$BUILD/tests/qemu_native
mkdir -p "$log"
fail=0
run() { env -u MAKEFLAGS -u MFLAGS make -s --no-print-directory BUILD="$BUILD" qemu-check NATIVE=1 ARCHES="$1"; }

if [ "$(uname -m)" != x86_64 ]; then
  # A real arm64/ppc64le runner: the host's own arch, as CI's native job does.
  run "" >"$log/host.log" 2>&1 || { cat "$log/host.log"; exit 1; }
  tail -n 3 "$log/host.log"
  echo "qemu_native: the host's own matrix passed"
  exit 0
fi

# i686 natively, with a qemu-i386 first on PATH that only fails: a run that
# still went through QEMU would fail.
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
printf '#!/bin/sh\necho "qemu-i386 stub: NATIVE=1 must not use QEMU" >&2\nexit 99\n' >"$stub/qemu-i386"
chmod +x "$stub/qemu-i386"
PATH=$stub:$PATH run i686 >"$log/i686.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q '^qemu-check (NATIVE=1, no QEMU): 1 rows (i686), 0 failed stages' "$log/i686.log" ||
   ! grep -qE '^i686 +[0-9]+ +PASS +PASS +PASS +PASS +PASS' "$log/i686.log"; then
  echo "FAIL: NATIVE=1 ARCHES=i686 did not pass (exit $rc):"; cat "$log/i686.log"; fail=1
fi

run aarch64 >"$log/aarch64.log" 2>&1
rc=$?
if [ $rc -eq 0 ] || ! grep -q 'host cannot execute aarch64 binaries' "$log/aarch64.log"; then
  echo "FAIL: NATIVE=1 ARCHES=aarch64 on x86_64 should fail as not runnable (exit $rc):"; cat "$log/aarch64.log"; fail=1
fi
[ $fail -eq 0 ] && echo "qemu_native: i686 ran natively and passed; aarch64 was refused as not runnable here"
exit $fail
