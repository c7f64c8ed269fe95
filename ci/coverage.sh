#!/usr/bin/env bash
# `make coverage`: line and branch coverage of src/ with clang's
# source-based coverage (llvm-cov), from the unit, API and seed tests and the
# corpus replay (seeds and regressions of every target) through the oracle,
# and the same at each hardening level above 0.
#
# Builds everything in $COV_BUILD (default build-cov) with clang -O0
# -fprofile-instr-generate -fcoverage-mapping, runs each program with its own
# LLVM_PROFILE_FILE, merges the profiles and writes
#   $COV_BUILD/coverage/index.html   the HTML report (per file, per line)
#   $COV_BUILD/coverage/summary.txt  llvm-cov report: regions, functions,
#                                    lines and branches per file of src/
# A process that ends in _exit or abort writes no profile: the fork
# children and the fatal paths their tests check count as not run.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
B=${COV_BUILD:-build-cov}
# clang 14's profiles need llvm 14's tools (Debian package llvm-14).
PROFDATA=$(command -v llvm-profdata-14 || command -v llvm-profdata)
COV=$(command -v llvm-cov-14 || command -v llvm-cov)
command -v clang >/dev/null || { echo "coverage: clang not found: install the Debian package clang (ci/deps.sh check)" >&2; exit 2; }
[ -n "$PROFDATA" ] && [ -n "$COV" ] ||
  { echo "coverage: llvm-profdata-14 or llvm-cov-14 not found: install the Debian package llvm-14 (ci/deps.sh check)" >&2; exit 2; }
FLAGS="-O0 -fprofile-instr-generate -fcoverage-mapping"
echo "coverage: building in $B (clang, $FLAGS)"
mkdir -p "$B"
make -s BUILD="$B" CC=clang OPT=-O0 EXTRA_CFLAGS="$FLAGS" tests fuzz-replay-build >"$B/build.log" 2>&1 ||
  { echo "coverage: build failed (log: $B/build.log)" >&2; tail -20 "$B/build.log" >&2; exit 1; }
prof=$B/profiles
rm -rf "$prof" "$B/coverage"
mkdir -p "$prof" "$B/coverage"

bins=()
run() { # NAME CMD...: runs CMD with its own profile file; a failure is reported, not fatal
  local name=$1
  shift
  LLVM_PROFILE_FILE="$prof/$name-%p.profraw" timeout 600 "$@" >"$prof/$name.log" 2>&1 ||
    echo "coverage: $name exited with status $? (log: $prof/$name.log); its profile still counts"
}
for t in "$B"/tests/unit_* "$B"/tests/api_* "$B"/tests/seed_*; do
  [ -x "$t" ] && [ -f "tests/$(basename "$t").c" ] || continue
  run "$(basename "$t")" "$t"
  bins+=("$t")
done
read -r -a targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
for t in "${targets[@]}"; do
  dirs=()
  for d in "corpus/$t" "corpus/regressions/$t"; do [ -d "$d" ] && dirs+=("$d"); done
  run "replay-$t" "$B/fuzz/replay/$t" -q "${dirs[@]}"
  bins+=("$B/fuzz/replay/$t")
done
# The hardening levels (src/harden.c): what tests/harden_levels.sh runs at
# each level above 0.  (The corrupt target sets its level per input, in
# children whose profiles are not written.)
for level in 1 2 3; do
  for t in api_glibc unit_sized unit_threads unit_core seed_large_realloc; do
    VIGIL_OPTIONS=harden=$level run "$t-harden$level" "$B/tests/$t"
  done
  for t in "${targets[@]}"; do
    [ "$t" = corrupt ] && continue
    dirs=()
    for d in "corpus/$t" "corpus/regressions/$t"; do [ -d "$d" ] && dirs+=("$d"); done
    VIGIL_OPTIONS=harden=$level run "replay-$t-harden$level" "$B/fuzz/replay/$t" -q "${dirs[@]}"
  done
done
shopt -s nullglob
raw=("$prof"/*.profraw)
[ ${#raw[@]} -gt 0 ] || { echo "coverage: no profiles were written" >&2; exit 1; }
"$PROFDATA" merge -sparse -o "$B/coverage.profdata" "${raw[@]}" || exit 1
objs=()
for b in "${bins[@]:1}"; do objs+=(-object "$b"); done
# src/annotate.h is not counted: in this build (no memcheck, no sanitizer)
# each of its functions is empty; tests/valgrind_demo.sh and
# tests/asan_poison.sh exercise it in the builds where it is not.
mapfile -t srcs < <(ls "$ROOT"/src/*.c "$ROOT"/src/*.h | grep -v '/annotate\.h$')
"$COV" report -instr-profile "$B/coverage.profdata" "${bins[0]}" "${objs[@]}" -show-branch-summary \
  "${srcs[@]}" >"$B/coverage/summary.txt" || exit 1
"$COV" show -format=html -show-branches=count -instr-profile "$B/coverage.profdata" -output-dir "$B/coverage" \
  "${bins[0]}" "${objs[@]}" "${srcs[@]}" || exit 1
sed "s|$ROOT/||" "$B/coverage/summary.txt"
echo "coverage: ${#raw[@]} profiles from ${#bins[@]} programs; report in $B/coverage/index.html"
