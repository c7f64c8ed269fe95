#!/usr/bin/env bash
# `make tsan-check`: ThreadSanitizer builds of the threaded code paths.
#  1. the replay drivers of the threaded fuzz targets (threads: 2-4 threads,
#     remote frees, handoffs; fork: forks while threads allocate), with
#     vigil's sources, all built with -fsanitize=thread
#     ($(BUILD)/fuzz/replay-tsan/<t>, fuzz/fuzz.mk), replaying corpus/<t>
#     and its regressions (threads 5 times each, fork twice);
#  2. tests/unit_threads.c (threads in waves, remote frees, heap adoption)
#     built with -fsanitize=thread against vigil's sources;
#  3. tests/tsan_remote.sh (the remote-free stress, and its proof that a
#     relaxed push/take is reported).
# Any ThreadSanitizer report fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=$BUILD/tsan-check
mkdir -p "$out"
command -v clang >/dev/null || { echo "tsan-check: clang missing: install the Debian packages clang and libclang-rt-14-dev"; exit 1; }
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0"

report() { # NAME LOG
  echo "FAIL: $1 under TSan:"
  grep -A12 'WARNING: ThreadSanitizer' "$2" | head -30 || tail -20 "$2"
  exit 1
}

env -u MAKEFLAGS make -s --no-print-directory BUILD="$BUILD" "$BUILD/fuzz/replay-tsan/threads" \
  "$BUILD/fuzz/replay-tsan/fork" >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
for t in threads fork; do
  dirs=("corpus/$t")
  [ -d "corpus/regressions/$t" ] && dirs+=("corpus/regressions/$t")
  n=5
  [ $t = fork ] && n=2
  "$BUILD/fuzz/replay-tsan/$t" -q -n $n "${dirs[@]}" >"$out/$t.log" 2>&1 || report "the $t target" "$out/$t.log"
  echo "ok: $t target under TSan ($(grep -o 'replayed [0-9]* inputs.*' "$out/$t.log" | tail -1))"
done

clang -std=gnu11 -O1 -g -fsanitize=thread -pthread -DVIGIL_PREFIX -DVIGIL_NO_SDT -Isrc -Itests \
  -o "$out/unit_threads" tests/unit_threads.c src/*.c
"$out/unit_threads" >"$out/unit_threads.log" 2>&1 || report unit_threads "$out/unit_threads.log"
echo "ok: $(tail -n 1 "$out/unit_threads.log") under TSan"

BUILD=$BUILD bash tests/tsan_remote.sh
echo "tsan-check: clean"
