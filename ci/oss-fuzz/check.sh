#!/bin/bash
# make oss-fuzz-check: ci/oss-fuzz/build.sh run the way OSS-Fuzz runs it, then
# its $OUT checked the way OSS-Fuzz's check_build checks a build.
#
#   ci/oss-fuzz/check.sh [-s SECONDS | -n RUNS] [CONFIG...]
#     CONFIG: libfuzzer-address libfuzzer-undefined afl-address none-memory
#     (default: all four).  none-memory: build.sh with MemorySanitizer and OSS-Fuzz's
#     "none" engine (ci/oss-fuzz/standalone_main.c, as Debian has no
#     MSan-built libFuzzer), every target run over its seed corpus.
#     SECONDS: how long each target fuzzes at the end (default 10).
#     RUNS: instead, each target fuzzes for its seed corpus and RUNS more
#     inputs from a fixed seed (libFuzzer -seed=1337 -runs=; AFL++ -s 1337
#     -E), so the run does the same work every time (make check's form).
#
# Each configuration works in a throw-away copy of the tracked files (as they
# are in the working tree: uncommitted edits are tested, untracked and ignored
# files such as build/ are not there), so a pass shows that build.sh needs
# nothing the repository does not hold.  The environment is OSS-Fuzz's for
# that configuration: CC, CXX, CFLAGS, CXXFLAGS, LIB_FUZZING_ENGINE, SANITIZER,
# FUZZING_ENGINE, ARCHITECTURE, SRC, OUT, WORK, and the run-time
# ASAN_OPTIONS/UBSAN_OPTIONS.  Then, for every target in $OUT:
#   - its .options, .dict and _seed_corpus.zip exist and are well formed;
#   - it is an x86-64 executable compiled with the configuration's sanitizer
#     and no other (counts of calls into each sanitizer's runtime);
#   - the engine check: libFuzzer runs 4 inputs from seed 1337, reports
#     coverage instrumentation and at least 100 edges; afl-fuzz starts
#     ("All set and ready to roll") with no crash or hang at start-up;
#   - libFuzzer: every seed of the seed corpus runs without a crash;
#   - it fuzzes for SECONDS (or RUNS inputs) from its seed corpus, with its
#     .options and .dict.
# Exit 0 when every check of every configuration passed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
secs=10 runs=
usage() { echo "usage: $0 [-s SECONDS | -n RUNS] [CONFIG...]" >&2; exit 2; }
while getopts s:n: o; do
  case $o in s) secs=$OPTARG ;; n) runs=$OPTARG ;; *) usage ;; esac
done
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "oss-fuzz-check: -s wants a positive whole number of seconds, not '$secs'" >&2; usage; }
[ -z "$runs" ] || [[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "oss-fuzz-check: -n wants a positive whole number of inputs, not '$runs'" >&2; usage; }
shift $((OPTIND - 1))
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(libfuzzer-address libfuzzer-undefined afl-address none-memory)

need() { command -v "$1" >/dev/null 2>&1 || { echo "oss-fuzz-check: $1 not found: install the Debian package $2 (bash ci/deps.sh oss-fuzz)" >&2; exit 1; }; }
need clang clang
need clang++ clang
need zip zip
need unzip unzip
need objdump binutils
need file file
need git git

tmp=$(mktemp -d /tmp/vigil-oss-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "  FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "  ok: $*"; }

# OSS-Fuzz's flags (infra/base-images/base-builder), by sanitizer.  One
# difference: OSS-Fuzz's CXXFLAGS end in -stdlib=libc++, because its
# libFuzzer is built against libc++; Debian's libclang_rt.fuzzer and
# libAFLDriver are built against libstdc++ and do not link with it, so the
# local CXXFLAGS leave it out (the targets themselves are C).
SAN_address="-fsanitize=address -fsanitize-address-use-after-scope"
ub_checks=array-bounds,bool,builtin,enum,float-divide-by-zero,function,integer-divide-by-zero,null,object-size,return,returns-nonnull-attribute,shift,signed-integer-overflow,unreachable,vla-bound,vptr
SAN_undefined="-fsanitize=$ub_checks,unsigned-integer-overflow -fno-sanitize-recover=$ub_checks"
SAN_memory="-fsanitize=memory -fsanitize-memory-track-origins"
BASE_CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"

# Options of <t>.options, section [sec], as key=value:key=value.
options_of() {
  awk -v sec="[$2]" '/^\[/ {on = ($0 == sec); next} on && /=/ {gsub(/[ \t]/, ""); printf "%s%s", (n++ ? ":" : ""), $0}' "$1"
}

check_config() {
  local cfg=$1 engine=${1%%-*} san=${1#*-}
  local src=$tmp/$cfg/src out=$tmp/$cfg/out work=$tmp/$cfg/work
  mkdir -p "$src/vigil" "$out" "$work"
  (cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$src/vigil" || { fail "copying the tree"; return; }
  cp "$ROOT/ci/oss-fuzz/build.sh" "$src/build.sh"
  local sanflags
  eval "sanflags=\$SAN_$san"
  local -a env=(SRC="$src" OUT="$out" WORK="$work" SANITIZER="$san" FUZZING_ENGINE="$engine"
    ARCHITECTURE=x86_64 FUZZING_LANGUAGE=c)
  case $engine in
    libfuzzer)
      env+=(CC=clang CXX=clang++ CFLAGS="$BASE_CFLAGS $sanflags -fsanitize=fuzzer-no-link"
        CXXFLAGS="$BASE_CFLAGS $sanflags -fsanitize=fuzzer-no-link"
        LIB_FUZZING_ENGINE=-fsanitize=fuzzer) ;;
    none)
      clang $BASE_CFLAGS $sanflags -c "$ROOT/ci/oss-fuzz/standalone_main.c" -o "$tmp/$cfg/standalone_main.o" ||
        { fail "standalone_main.c does not compile"; return; }
      env+=(CC=clang CXX=clang++ CFLAGS="$BASE_CFLAGS $sanflags" CXXFLAGS="$BASE_CFLAGS $sanflags"
        LIB_FUZZING_ENGINE="$tmp/$cfg/standalone_main.o") ;;
    afl)
      need afl-clang-fast afl++
      need afl-fuzz afl++
      local driver=/usr/lib/afl/libAFLDriver.a
      [ -f $driver ] || { fail "$driver is missing: install the Debian package afl++"; return; }
      env+=(CC=afl-clang-fast CXX=afl-clang-fast++ CFLAGS="$BASE_CFLAGS $sanflags"
        CXXFLAGS="$BASE_CFLAGS $sanflags" LIB_FUZZING_ENGINE="$driver" AFL_QUIET=1) ;;
    *) fail "unknown engine in $cfg"; return ;;
  esac
  echo "== $cfg: build.sh (in $src, as OSS-Fuzz runs it: from \$SRC/build.sh, cwd \$SRC/vigil)"
  local t0=$SECONDS
  if ! (cd "$src/vigil" && env "${env[@]}" bash -eu "$src/build.sh") >"$tmp/$cfg/build.log" 2>&1; then
    tail -20 "$tmp/$cfg/build.log"
    fail "build.sh failed (log above)"
    return
  fi
  ok "build.sh: $(tail -1 "$tmp/$cfg/build.log") ($((SECONDS - t0)) s)"

  local asan_opts="allocator_may_return_null=1" ubsan_opts="print_stacktrace=1:print_summary=1:silence_unsigned_overflow=1"
  local t f
  for f in "$out"/*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    t=$(basename "$f")
    echo "-- $cfg/$t"
    # The files beside the target.
    [ -f "$out/$t.options" ] && grep -q '^\[libfuzzer\]' "$out/$t.options" && ok "$t.options" || fail "$t.options missing or without [libfuzzer]"
    if [ -s "$out/$t.dict" ] && ! grep -vqE '^(#.*|"([^"\\]|\\x[0-9a-f]{2}|\\\\|\\")*"|)$' "$out/$t.dict"; then
      ok "$t.dict: $(grep -c '^"' "$out/$t.dict") tokens"
    else fail "$t.dict missing or malformed"; fi
    local seeds=$work/check-seeds/$t
    rm -rf "$seeds" && mkdir -p "$seeds"
    if unzip -q "$out/${t}_seed_corpus.zip" -d "$seeds" 2>/dev/null && [ -n "$(ls -A "$seeds")" ]; then
      ok "${t}_seed_corpus.zip: $(ls "$seeds" | wc -l) inputs"
    else fail "${t}_seed_corpus.zip missing, broken or empty"; fi
    # Architecture and sanitizers, counted as check_build counts them.
    file -L "$f" | grep -q "x86-64" && ok "x86-64 executable" || fail "not an x86-64 executable"
    local dis asan msan ubsan
    dis=$(objdump -d "$f")
    asan=$(grep -cE 'call[q]?\s+[0-9a-f]+ <__asan' <<<"$dis")
    msan=$(grep -cE 'call[q]?\s+[0-9a-f]+ <__msan' <<<"$dis")
    ubsan=$(grep -cE 'call[q]?\s+[0-9a-f]+ <__ubsan' <<<"$dis")
    case $san in
      address) { [ "$asan" -ge 1000 ] && [ "$msan" -le 3 ] && [ "$ubsan" -le 200 ]; } ;;
      undefined) { [ "$engine" != libfuzzer ] || { [ "$asan" -eq 0 ] && [ "$msan" -le 3 ] && [ "$ubsan" -ge 168 ]; }; } ;;
      memory) { [ "$asan" -eq 0 ] && [ "$msan" -ge 1000 ] && [ "$ubsan" -le 200 ]; } ;;
    esac && ok "sanitizer calls: asan $asan, msan $msan, ubsan $ubsan" ||
      fail "wrong sanitizer instrumentation for $san: asan $asan, msan $msan, ubsan $ubsan"

    local lf_opts as_opts
    lf_opts=$(options_of "$out/$t.options" libfuzzer | tr ':' '\n' | sed 's/^/-/' | tr '\n' ' ')
    as_opts=$(options_of "$out/$t.options" asan)
    local -a renv=(ASAN_OPTIONS="$asan_opts${as_opts:+:$as_opts}" UBSAN_OPTIONS="$ubsan_opts")
    local log=$work/$t.log
    case $engine in
      libfuzzer)
        # shellcheck disable=SC2086
        (cd "$work" && env "${renv[@]}" "$f" -seed=1337 -runs=4 $lf_opts) >"$log" 2>&1
        local edges
        edges=$(grep -oE 'INFO: Loaded [0-9]+ modules? +\([0-9]+ inline 8-bit counters\)' "$log" | grep -oE '[0-9]+ inline' | grep -oE '[0-9]+')
        if grep -q "Done 4 runs" "$log" && ! grep -q "no interesting inputs were found" "$log" && [ "${edges:-0}" -ge 100 ]; then
          ok "engine: 4 runs from seed 1337, $edges edges instrumented"
        else tail -5 "$log"; fail "engine check (startup crash, or no coverage instrumentation)"; fi
        # shellcheck disable=SC2086
        if (cd "$work" && env "${renv[@]}" "$f" -runs=0 $lf_opts "$seeds") >"$log" 2>&1; then
          ok "seed corpus: no crash"
        else tail -5 "$log"; fail "a seed crashes"; fi
        mkdir -p "$work/corpus-$t" "$work/crashes-$t"
        # -runs counts the seed corpus's inputs too.
        local bound=(-max_total_time="$secs") what="${secs} s"
        [ -z "$runs" ] || { bound=(-seed=1337 -runs=$(($(ls "$seeds" | wc -l) + runs))); what="the seeds and $runs inputs from seed 1337"; }
        # shellcheck disable=SC2086
        if (cd "$work" && env "${renv[@]}" "$f" "${bound[@]}" -dict="$out/$t.dict" $lf_opts \
          -artifact_prefix="$work/crashes-$t/" -print_final_stats=1 "$work/corpus-$t" "$seeds") >"$log" 2>&1; then
          ok "fuzzed $what: $(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$') inputs, $(grep -oE '#[0-9]+.*cov: [0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+')"
        else grep -m3 -E "ERROR|vigil oracle|SUMMARY" "$log"; fail "$t crashed while fuzzing (artifact in $work/crashes-$t, log $log)"; fi
        ;;
      none)
        if (cd "$work" && env MSAN_OPTIONS=print_stats=1 "$f" "$seeds"/*) >"$log" 2>&1 && grep -q "ran [0-9]* inputs" "$log"; then
          ok "MemorySanitizer: $(grep -o 'ran [0-9]* inputs' "$log") of the seed corpus, clean"
        else grep -m5 -E "WARNING|SUMMARY|vigil" "$log"; fail "$t under MemorySanitizer (log $log)"; fi
        ;;
      afl)
        # As check_build does: afl-fuzz must get through start-up; then the
        # timed run.  AFL_SKIP_CPUFREQ and AFL_NO_AFFINITY: a shared machine.
        local -a aenv=(AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_FORKSRV_INIT_TMOUT=30000
          AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 ASAN_OPTIONS="$asan_opts${as_opts:+:$as_opts}:abort_on_error=1:symbolize=0")
        rm -rf "$work/afl-$t"
        local bound=(-V "$secs") what="${secs} s" limit=$((secs + 60))
        [ -z "$runs" ] || { bound=(-s 1337 -E "$runs"); what="about $runs inputs from seed 1337"; limit=600; }
        (cd "$work" && env "${aenv[@]}" timeout -k 5 $limit afl-fuzz -i "$seeds" -o "$work/afl-$t" \
          -x "$out/$t.dict" "${bound[@]}" -t 10000 -- "$f") >"$log" 2>&1
        local crashes
        crashes=$(find "$work/afl-$t" -path '*/crashes/id:*' 2>/dev/null | wc -l)
        if grep -q "All set and ready to roll" "$log" && ! grep -qE "target binary (crashed|terminated)" "$log"; then
          ok "afl-fuzz started"
        else grep -m5 -E "PROGRAM ABORT|ERROR|crashed|terminated" "$log"; fail "afl-fuzz did not start (log $log)"; fi
        if [ "$crashes" -eq 0 ]; then
          ok "fuzzed $what: $(sed -n 's/^execs_done *: *//p' "$work/afl-$t"/default/fuzzer_stats 2>/dev/null) inputs"
        else fail "$t: $crashes crashes while fuzzing ($work/afl-$t)"; fi
        ;;
    esac
  done
  [ -n "$(find "$out" -maxdepth 1 -type f -executable)" ] || fail "no fuzz target in \$OUT"
}

for c in "${configs[@]}"; do
  case $c in libfuzzer-address | libfuzzer-undefined | afl-address) check_config "$c" ;;
    none-memory) check_config "$c" ;;
    *) echo "oss-fuzz-check: unknown configuration $c (libfuzzer-address, libfuzzer-undefined, afl-address, none-memory)" >&2; exit 2 ;;
  esac
done
if [ "$failures" -eq 0 ]; then
  echo "oss-fuzz-check: ${configs[*]}: every check passed"
else
  echo "oss-fuzz-check: $failures checks failed"
  trap - EXIT
  echo "(work kept in $tmp)"
  exit 1
fi
