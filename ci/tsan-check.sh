#!/usr/bin/env bash
# `make tsan-check`: ThreadSanitizer builds of the threaded code paths.
#  1. the threads fuzz target's replay driver, with vigil's sources, all
#     built with -fsanitize=thread, replaying corpus/threads and its
#     regressions (each input 5 times);
#  2. tests/tsan_remote.sh (the remote-free stress, and its proof that a
#     relaxed push/take is reported).
# Any ThreadSanitizer report fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=$BUILD/tsan-check
mkdir -p "$out"
command -v clang >/dev/null || { echo "tsan-check: clang missing: install the Debian packages clang and libclang-rt-14-dev"; exit 1; }
for t in threads; do
  clang -std=gnu11 -O1 -g -fsanitize=thread -pthread -DVIGIL_PREFIX -Isrc -Ifuzz -Idiff \
    -o "$out/$t" src/*.c "fuzz/$t.c" fuzz/replay.c fuzz/program.c diff/*.c
  dirs=("corpus/$t")
  [ -d "corpus/regressions/$t" ] && dirs+=("corpus/regressions/$t")
  if TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$out/$t" -q -n 5 "${dirs[@]}" >"$out/$t.log" 2>&1; then
    echo "ok: $t target under TSan ($(grep -o 'replayed [0-9]* inputs' "$out/$t.log" | tail -1))"
  else
    echo "FAIL: $t target under TSan:"; grep -A12 'WARNING: ThreadSanitizer' "$out/$t.log" | head -30 || tail -20 "$out/$t.log"
    exit 1
  fi
done
BUILD=$BUILD bash tests/tsan_remote.sh
echo "tsan-check: clean"
