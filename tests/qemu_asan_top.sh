#!/usr/bin/env bash
# ASan's unpoison of a mapping that ends at the top of QEMU's -R space
# (qemu-targets/README.md, "Known QEMU bugs"), shown by
# qemu-targets/bugs/asan_top_of_reserved_va.c, built for aarch64 with ASan:
#   - under qemu-aarch64 -R 0x8000000000 (2^39, the end of ASan's layout) a
#     mapping ends at 2^39 and the unpoison stops in ASan's CHECK.  The test
#     asserts that this is still so: the day it is not, it fails, saying
#     that the note can go;
#   - under the target's RESERVED_VA (qemu-targets/aarch64, what the
#     aarch64 libFuzzer runs use), one page short, the unpoison works.
# About 10 s.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
bash ci/deps.sh qemu-fuzz >/dev/null || exit 1
src=qemu-targets/bugs/asan_top_of_reserved_va.c
out=$BUILD/tests/qemu_asan_top
mkdir -p "$out"
bin=$out/asan_top_of_reserved_va
if ! clang --target=aarch64-linux-gnu -fsanitize=address -O1 -Wall -Wextra -o "$bin" "$src" >"$out/build.log" 2>&1; then
  cat "$out/build.log"
  echo "FAIL: the aarch64 ASan build failed (clang's aarch64 runtime: the Debian package libclang-rt-14-dev:arm64)"
  exit 1
fi
rv=$(sed -n 's/^RESERVED_VA=//p' qemu-targets/aarch64)
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { # run R: the output in $out/R.log, the status in rc
  { timeout -k 5 120 env ASAN_OPTIONS=detect_leaks=0 qemu-aarch64 -R "$1" -L /usr/aarch64-linux-gnu \
    -E LD_LIBRARY_PATH=/lib "$bin" >"$out/$1.log" 2>&1; } 2>/dev/null
  rc=$?
}

run 0x8000000000
if [ $rc -eq 0 ]; then
  bad "the CHECK is gone: under -R 0x8000000000 ASan unpoisoned a mapping ending at $(grep -o '0x[0-9a-f]*' "$out/0x8000000000.log" | head -n1).
      Update qemu-targets/README.md (Known QEMU bugs) and this test"
elif ! grep -q '^highest mapping ends at 0x8000000000$' "$out/0x8000000000.log" ||
     ! grep -q 'CHECK failed: asan_mapping.h:[0-9]* "((AddrIsInMem(p))) != (0)"' "$out/0x8000000000.log"; then
  bad "under -R 0x8000000000: expected a mapping ending at 0x8000000000 and ASan's AddrIsInMem CHECK; got exit $rc: $(head -c 600 "$out/0x8000000000.log")"
fi
run "$rv"
[ $rc -eq 0 ] && grep -q '^unpoisoned$' "$out/$rv.log" ||
  bad "under -R $rv (qemu-targets/aarch64's RESERVED_VA): exit $rc: $(head -c 600 "$out/$rv.log")"
[ $fail -eq 0 ] || exit 1
echo "qemu_asan_top: -R 0x8000000000: $(head -n1 "$out/0x8000000000.log"), then ASan's AddrIsInMem CHECK (still so); -R $rv: unpoisoned"
