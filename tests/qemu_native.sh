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

stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT

# Can this kernel run i686 binaries at all?  Not without IA32 emulation
# (CONFIG_IA32_EMULATION; some VM kernels leave it out).  Then the native
# i686 pass cannot be shown here: both arches must be refused as not
# runnable instead, and the test reports itself skipped, not passed.
printf 'int main(void) { return 0; }\n' >"$stub/probe.c"
if ! i686-linux-gnu-gcc -static -o "$stub/probe32" "$stub/probe.c" 2>"$stub/probe.log"; then
  echo "FAIL: i686-linux-gnu-gcc cannot build a static program (package gcc-i686-linux-gnu):"; cat "$stub/probe.log"; exit 1
fi
if ! "$stub/probe32" 2>/dev/null; then
  for arch in i686 aarch64; do
    run $arch >"$log/$arch.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] || ! grep -q "host cannot execute $arch binaries" "$log/$arch.log"; then
      echo "FAIL: NATIVE=1 ARCHES=$arch on a host that cannot run it should fail as not runnable (exit $rc):"
      cat "$log/$arch.log"; exit 1
    fi
  done
  echo "qemu_native: i686 and aarch64 were refused as not runnable, as they must be on this host"
  echo "skipped: the native i686 pass needs a kernel with IA32 emulation (this one, $(uname -r), cannot exec i686)"
  exit 77
fi

# i686 natively, with a qemu-i386 first on PATH that only fails: a run that
# still went through QEMU would fail.
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
