#!/usr/bin/env bash
# `make qemu-fuzz` in CI, briefly: the fuzz drivers running on the targets
# the user named, aarch64 (coverage-guided libFuzzer, ASan+UBSan, under
# qemu-aarch64) and ppc64le (the replay main's mutation mode under
# qemu-ppc64le -p 65536), 8 s on each of api and threads.  Every run must
# end "ok" having executed inputs; a crash is a real finding (the table
# names the saved file and the command that reproduces it).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
log=$BUILD/tests/qemu_fuzz_smoke.log
mkdir -p "$(dirname "$log")"
env -u MAKEFLAGS make -s --no-print-directory BUILD="$BUILD" qemu-fuzz SECONDS=8 ARCHES="aarch64 ppc64le" \
  FUZZ_TARGETS="api threads" >"$log" 2>&1
rc=$?
fail=0
for arch in aarch64 ppc64le; do
  engine=mutate
  [ $arch = aarch64 ] && engine=libfuzzer
  for t in api threads; do
    if ! grep -qE "^$arch +$t +$engine +[0-9]+ +[1-9][0-9]* +[0-9-]+ +0 +ok\$" "$log"; then
      echo "FAIL: $arch/$t ($engine) did not run clean with executions"
      fail=1
    fi
  done
done
if [ $rc -ne 0 ] || [ $fail -ne 0 ]; then
  echo "make qemu-fuzz exited $rc:"
  sed -n '/^arch /,$p' "$log"
  [ -n "$(sed -n '/^arch /p' "$log")" ] || tail -n 30 "$log"
  exit 1
fi
sed -n '/^arch /,/^$/p' "$log"
echo "qemu_fuzz_smoke: libFuzzer on aarch64 and the mutation driver on ppc64le ran clean"
