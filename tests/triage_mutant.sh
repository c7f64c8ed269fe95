#!/usr/bin/env bash
# `make triage` on a crash planted by one of the fuzz self-test's mutants
# (fuzz/mutants/usable-minus-16.patch), in a throw-away git repo whose
# history is: base (this tree), plant (the mutant), later (unrelated).
# It must print the reproduction matrix, minimize the input, symbolize the
# stack, write corpus/regressions/api/triage-<id>.ops with a NOTES line, and
# print a bisect command that names the "plant" commit.  The regression file
# must fail on the mutant and pass on the real tree; and an input the mutant
# passes must be reported as reproducing nowhere, with nothing written.
# Then the page-size-4k mutant, which only 16 and 64 KiB pages show, must be
# classified architecture-only and page-size-only (not emulator suspected:
# aarch64 under -R, at 4 KiB, passes too), with a stack from gdb-multiarch; and remote-push-relaxed, which only ThreadSanitizer shows,
# ordering suspected, with TSan's stack; and calloc-overzero, a write past
# the block by vigil's own calloc that the release build does not notice on
# this input, sanitizer-only, with ASan's stack at the line in src/api.c
# (vigil poisons block tails and free slots for ASan: src/annotate.h).
# (Subsets of the matrix, to stay short.)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
mutant=usable-minus-16 target=api
log=$ROOT/$BUILD/tests/triage_mutant
rm -rf "$log" && mkdir -p "$log"
work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-triage-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
git_c() { git -c user.name=triage-test -c user.email=triage-test@invalid -c commit.gpgsign=false "$@"; }

tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$work"
cd "$work" || exit 1
git init -q && git_c add -A && git_c commit -qm "base" || exit 1
patch -s -p1 <"fuzz/mutants/$mutant.patch" || { echo "FAIL: $mutant.patch does not apply"; exit 1; }
git_c commit -qam "plant: $mutant" && echo >>README.md && git_c commit -qam "later" || exit 1
base=$(git rev-parse HEAD~2) plant=$(git rev-parse --short HEAD~1)

# The crash: the first seed of the target that the mutant fails; and one it
# passes, for the negative case.
make -s --no-print-directory "build/fuzz/replay/$target" >"$log/build.log" 2>&1 || { cat "$log/build.log"; exit 1; }
crash="" clean=""
for f in corpus/"$target"/*.ops; do
  if { "build/fuzz/replay/$target" -q "$f" >/dev/null 2>&1; } 2>/dev/null; then clean=${clean:-$f}; else crash=${crash:-$f}; fi
done
[ -n "$crash" ] || { echo "FAIL: no seed of $target fails under $mutant: the test has nothing to triage"; exit 1; }
[ -n "$clean" ] || { echo "FAIL: every seed of $target fails under $mutant: no negative case"; exit 1; }

args=(ARCHES=aarch64 "VARIANTS=release asan" RUNS=2)
env -u MAKEFLAGS make -s --no-print-directory triage INPUT="$crash" "${args[@]}" >"$log/triage.log" 2>&1
rc=$?
out=$log/triage.log
[ $rc -eq 0 ] || bad "make triage INPUT=$crash exited $rc"
grep -qE '^where +fails +first failure$' "$out" || bad "no reproduction matrix"
grep -qE '^host release +2/2 +SIGABRT: vigil oracle: api: .*usable size' "$out" || bad "matrix: host release does not show the oracle's usable-size failure"
grep -qE '^host asan +2/2 +SIGABRT' "$out" || bad "matrix: no host asan row that fails"
for ps in 4 16 64; do
  grep -qE "^aarch64 p${ps}k +2/2 +SIGABRT: vigil oracle" "$out" || bad "matrix: no failing aarch64 row at ${ps} KiB pages"
done
grep -qE '^aarch64 -R p4k +2/2 +SIGABRT: vigil oracle' "$out" || bad "matrix: no failing aarch64 row under -R"
grep -qE '^aarch64 -R libFuzzer +2/2 ' "$out" || bad "matrix: no failing aarch64 libFuzzer row under -R"
grep -q '^classification: everywhere' "$out" || bad "not classified as failing everywhere"
if [[ $(grep -m1 '^minimized: ' "$out") =~ ^minimized:\ ([0-9]+)\ -\>\ ([0-9]+)\ bytes\ \(libFuzzer ]]; then
  [ "${BASH_REMATCH[2]}" -lt "${BASH_REMATCH[1]}" ] || bad "the input did not get smaller"
else
  bad "no libFuzzer minimization line"
fi
grep -A3 '^stack (gdb, the host release build):' "$out" | grep -qE '#[0-9]+ .* at [^ ]+\.c:[0-9]+' ||
  bad "no symbolized frame (file:line) in the stack"
reg=$(sed -n 's/^wrote \(corpus\/regressions\/api\/triage-[0-9a-f]*\.ops\) and a line in .*/\1/p' "$out")
if [ -z "$reg" ] || [ ! -f "$reg" ]; then
  bad "no regression file written"
else
  grep -q "^$(basename "$reg"): everywhere" corpus/regressions/api/NOTES || bad "no NOTES line for $(basename "$reg")"
  { "build/fuzz/replay/$target" -q "$reg" >"$log/reg-mutant.log" 2>&1; } 2>/dev/null &&
    bad "the regression file $reg passes on the mutant"
  make -s -C "$ROOT" --no-print-directory "$BUILD/fuzz/replay/$target" >/dev/null 2>&1
  "$ROOT/$BUILD/fuzz/replay/$target" -q "$reg" >"$log/reg-real.log" 2>&1 ||
    bad "the regression file fails on the real tree: $(head -n1 "$log/reg-real.log")"
  cp "$reg" "$log/"
fi

# The bisect command it printed, run: it must name the planted commit.
cmd=$(sed -n 's/^find the commit that introduced it: \(fuzz\/bisect\.sh .*\) GOOD_COMMIT \[BAD_COMMIT\]$/\1/p' "$out")
if [ -z "$cmd" ]; then
  bad "no bisect command printed"
else
  read -r -a bargs <<<"$cmd"
  bash "${bargs[@]}" "$base" >"$log/bisect.log" 2>&1 || bad "fuzz/bisect.sh failed: $(tail -n 3 "$log/bisect.log")"
  grep -q "^first bad commit: $plant plant: $mutant" "$log/bisect.log" ||
    bad "bisect did not name the planted commit $plant: $(tail -n 1 "$log/bisect.log")"
fi

# The negative: an input the mutant passes reproduces nowhere.
before=$(ls corpus/regressions/api | wc -l)
env -u MAKEFLAGS make -s --no-print-directory triage INPUT="$clean" "${args[@]}" >"$log/triage-clean.log" 2>&1
rc=$?
[ $rc -ne 0 ] || bad "triage of a passing input ($clean) exited 0"
grep -q 'reproduces nowhere' "$log/triage-clean.log" || bad "triage of a passing input did not say it reproduces nowhere"
[ "$(ls corpus/regressions/api | wc -l)" -eq "$before" ] || bad "triage of a passing input wrote a file"

# A bug only some page sizes show: the page-size-4k mutant (fuzz/mutants/)
# in a second copy; the host and aarch64 at 4 KiB pass, 16 and 64 KiB fail.
pg=$work/pagesize
mkdir -p "$pg"
tar --exclude='./build*' --exclude=./.git -C "$ROOT" -cf - . | tar -xf - -C "$pg"
(cd "$pg" && patch -s -p1 <fuzz/mutants/page-size-4k.patch) || { echo "FAIL: page-size-4k.patch does not apply"; exit 1; }
pout=$log/triage-pagesize.log
(cd "$pg" && env -u MAKEFLAGS make -s --no-print-directory triage INPUT=corpus/api/memalign-family.ops \
   ARCHES="aarch64 ppc64le" VARIANTS=release RUNS=1 MINIMIZE=0) >"$pout" 2>&1 || bad "make triage on the page-size mutant failed"
grep -qE '^host release +0/1 +pass' "$pout" || bad "page-size mutant: the host should pass"
grep -qE '^aarch64 p4k +0/1 +pass' "$pout" || bad "page-size mutant: aarch64 at 4 KiB should pass"
for row in 'aarch64 p16k' 'aarch64 p64k' 'ppc64le p64k'; do
  grep -qE "^$row +1/1 +SIGABRT: vigil oracle: api: .*not aligned" "$pout" || bad "page-size mutant: $row should fail with a misaligned block"
done
grep -q '^classification: .*architecture-only (aarch64 ppc64le)' "$pout" || bad "page-size mutant: not classified architecture-only"
grep -q '^classification: .*page-size-only (aarch64 fails at 16384 65536, passes at 4096)' "$pout" ||
  bad "page-size mutant: not classified page-size-only"
grep -qE '^aarch64 -R p4k +0/1 +pass' "$pout" || bad "page-size mutant: aarch64 under -R at 4 KiB should pass"
grep -q '^classification: .*emulator suspected' "$pout" && bad "page-size mutant: classified emulator suspected"
grep -A12 '^stack (gdb-multiarch on qemu-' "$pout" | grep -qE '#[0-9]+ .* at [^ ]+\.c:[0-9]+' ||
  bad "page-size mutant: no symbolized frame from gdb-multiarch"

# An ordering bug: the remote push made relaxed (remote-push-relaxed), which
# no plain build shows on x86 and ThreadSanitizer does.
rl=$work/relaxed
mkdir -p "$rl"
tar --exclude='./build*' --exclude=./.git -C "$ROOT" -cf - . | tar -xf - -C "$rl"
(cd "$rl" && patch -s -p1 <fuzz/mutants/remote-push-relaxed.patch) || { echo "FAIL: remote-push-relaxed.patch does not apply"; exit 1; }
rout=$log/triage-relaxed.log
(cd "$rl" && env -u MAKEFLAGS make -s --no-print-directory triage INPUT=corpus/threads/remote-drain-race.ops \
   ARCHES= "VARIANTS=release tsan" RUNS=12 MINIMIZE=0) >"$rout" 2>&1 || bad "make triage on the relaxed-push mutant failed"
# (TSan sees this race in about half the runs: 12 runs miss it 1 time in 4000.)
grep -qE '^host release +0/12 +pass' "$rout" || bad "relaxed push: the plain build should pass"
grep -qE '^host tsan +([1-9]|1[0-2])/12 +race: WARNING: ThreadSanitizer: data race' "$rout" || bad "relaxed push: TSan should report a race"
grep -q '^classification: .*ordering suspected (ThreadSanitizer reports a data race)' "$rout" ||
  bad "relaxed push: not classified as ordering suspected"
grep -A12 "^stack (the TSan build's report, host)" "$rout" | grep -qE 'src/heap\.c:[0-9]+' ||
  bad "relaxed push: the TSan stack does not reach src/heap.c"

# A write past a block inside vigil: calloc-overzero zeroes 16 bytes past
# the request.  Only the poisoned tail sees it on calloc-tail.ops (a 200-byte
# request in a 224-byte slot: the write stays in the slot); the real
# tree's ASan build must pass the same input, so the report is the bug's.
oz=$work/overzero
mkdir -p "$oz"
tar --exclude='./build*' --exclude=./.git -C "$ROOT" -cf - . | tar -xf - -C "$oz"
(cd "$oz" && patch -s -p1 <fuzz/mutants/calloc-overzero.patch) || { echo "FAIL: calloc-overzero.patch does not apply"; exit 1; }
zout=$log/triage-overzero.log
(cd "$oz" && env -u MAKEFLAGS make -s --no-print-directory triage INPUT=corpus/api/calloc-tail.ops \
   ARCHES= "VARIANTS=release asan" RUNS=1 MINIMIZE=0) >"$zout" 2>&1 || bad "make triage on the calloc-overzero mutant failed"
grep -qE '^host release +0/1 +pass' "$zout" || bad "calloc-overzero: the release build should pass this input"
grep -qE '^host asan +1/1 +exit 1: .*ERROR: AddressSanitizer: use-after-poison' "$zout" ||
  bad "calloc-overzero: the ASan row should fail with use-after-poison"
grep -q '^classification: sanitizer-only (asan)' "$zout" || bad "calloc-overzero: not classified sanitizer-only (asan)"
# ASan's own stack (the lines right after its ERROR line), not vigil's
# history of the block, which the report also shows.
grep -A3 "^stack (the ASan build's report, host)" "$zout" | grep -A2 'ERROR: AddressSanitizer: use-after-poison' |
  grep -qE 'in alloc_any .*src/api\.c:[0-9]+' || bad "calloc-overzero: ASan's stack does not reach vigil's calloc in src/api.c"
grep -q "^ *vigil: 0x[0-9a-f]* is 0 bytes after the live [0-9]*-byte block" "$zout" ||
  bad "calloc-overzero: the stack does not show vigil's history of the block"
make -s -C "$ROOT" --no-print-directory "$BUILD/fuzz/replay-asan/api" >/dev/null 2>&1
ASAN_OPTIONS=detect_leaks=0 "$ROOT/$BUILD/fuzz/replay-asan/api" -q corpus/api/calloc-tail.ops >"$log/overzero-real.log" 2>&1 ||
  bad "calloc-tail.ops fails under ASan on the real tree: $(grep -m1 ERROR "$log/overzero-real.log")"

if [ $fail -ne 0 ]; then
  echo "--- make triage output:"; cat "$out"
  echo "--- make triage output (page-size mutant):"; cat "$pout" 2>/dev/null
  echo "--- make triage output (relaxed push):"; cat "$rout" 2>/dev/null
  echo "--- make triage output (calloc-overzero):"; cat "$zout" 2>/dev/null
  exit 1
fi
echo "triage_mutant: $mutant: $(basename "$crash") failed everywhere in the matrix, $(grep -m1 '^minimized' "$out" | cut -d'(' -f1)"
echo "triage_mutant: wrote $(basename "$reg") (fails on the mutant, passes here); bisect named $plant; a passing input reproduced nowhere"
echo "triage_mutant: page-size-4k: $(grep -m1 '^classification' "$pout")"
echo "triage_mutant: remote-push-relaxed: $(grep -m1 '^classification' "$rout")"
echo "triage_mutant: calloc-overzero: $(grep -m1 '^classification' "$zout"), ASan's stack at $(grep -A6 "^stack (the ASan" "$zout" | grep -m1 -oE 'src/api\.c:[0-9]+')"
