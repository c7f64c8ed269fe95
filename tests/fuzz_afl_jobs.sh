#!/bin/bash
# make fuzz ENGINE=afl JOBS=N, briefly: fuzz/run.sh -e afl -j 4 on the edge
# target for 5 s must run four instances on one output folder, in their
# roles: main as -M on the plain build, cmplog as -S with -c and the
# afl-cmplog build, asan as -S on the afl-asan build, plain3 as -S with a
# power schedule; each must have fuzzed, and the summary must add them up.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
bash ci/deps.sh fuzz >/dev/null || exit 1
make -s --no-print-directory BUILD="$BUILD" fuzz-replay-build \
  "$BUILD/fuzz/afl/edge" "$BUILD/fuzz/afl-cmplog/edge" "$BUILD/fuzz/afl-asan/edge" >/dev/null || exit 1
work=$(mktemp -d /tmp/vigil-afl-jobs.XXXXXX)
trap 'rm -rf "$work"' EXIT
# -t 60: four instances share 2 cores here; a busy machine made one input
# of the edge target take over the default 10 s once (a "timeout" that did
# not reproduce), and this test is about the instances, not hangs.
BUILD=$BUILD bash fuzz/run.sh -e afl -j 4 -s 5 -t 60 -w "$work" edge >"$work/run.log" 2>&1
rc=$?
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=1; fi; }
out=$work/afl/edge/afl-out
cmd() { sed -n 's/^command_line *: *//p' "$out/$1/fuzzer_stats" 2>/dev/null; }
check "run.sh exits 0 (exit $rc)" '[ $rc -eq 0 ]'
check "four instance folders" '[ "$(ls "$out" 2>/dev/null | sort | tr "\n" " ")" = "asan cmplog main plain3 " ]'
check "main: -M, plain build" '[[ "$(cmd main)" == *"-M main"*"/fuzz/afl/edge" ]]'
check "cmplog: -S with -c afl-cmplog" '[[ "$(cmd cmplog)" == *"-S cmplog -c "*"/fuzz/afl-cmplog/edge"*"/fuzz/afl/edge" ]]'
check "asan: -S on the afl-asan build" '[[ "$(cmd asan)" == *"-S asan"*"/fuzz/afl-asan/edge" ]]'
check "plain3: -S with a power schedule" '[[ "$(cmd plain3)" == *"-S plain3 -p explore"* ]]'
for i in main cmplog asan plain3; do
  n=$(sed -n 's/^execs_done *: *//p' "$out/$i/fuzzer_stats" 2>/dev/null)
  check "$i fuzzed (execs_done ${n:-none})" '[ "${n:-0}" -gt 0 ]'
done
total=$(awk -F' *: *' '$1 == "execs_done" { e += $2 } END { print e + 0 }' "$out"/*/fuzzer_stats)
check "the summary adds the instances' execs ($total)" 'grep -E "^edge +afl .* $total " "$work/run.log" >/dev/null'
[ $fails -eq 0 ] || tail -20 "$work/run.log"
exit $fails
