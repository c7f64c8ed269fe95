#!/usr/bin/env bash
# Triage of one failing input (`make triage INPUT=f`):
#   1. replays it on the host (release, ASan, UBSan, TSan, Valgrind) and under
#      every QEMU target at each of its page sizes, RUNS times each, and
#      prints the reproduction matrix; a target with RESERVED_VA (aarch64)
#      gets two rows more under `qemu -R`, the guest address space of its
#      libFuzzer runs: the same static replay build at its first page size,
#      and the libFuzzer (ASan+UBSan) build as `make qemu-fuzz` runs it;
#   2. classifies the failure (everywhere, architecture-only, page-size-only,
#      thread-only, ordering suspected, sanitizer-only, emulator suspected:
#      only the -R rows fail);
#   3. minimizes it: libFuzzer's -minimize_crash when the libFuzzer build
#      (ASan+UBSan) reproduces it, else afl-tmin on the AFL++ build; the
#      result must still fail as the reference cell did, or the original is
#      kept;
#   4. symbolizes the stack: ASan/UBSan's report, gdb on the host build, or
#      gdb-multiarch attached to QEMU's gdb stub for an arch-only failure;
#   5. writes corpus/regressions/<target>/<id>.ops (the text form) and a line
#      in that folder's NOTES, and prints the `fuzz/bisect.sh` command that
#      finds the commit that introduced it.
#
#   fuzz/triage.sh [-t TARGET] [-a "ARCHES"] [-v "VARIANTS"] [-r RUNS]
#                  [-o REGRESSIONS_DIR] [-M] [-W] INPUT
#   -t  the fuzz target (default: from INPUT's path: corpus/<t>/,
#       corpus/regressions/<t>/, a fuzz work folder .../<t>/crashes/, or the
#       target named in INPUT.repro.sh)
#   -a  QEMU targets (default: every file in qemu-targets/); "" for none
#   -v  host variants (default: release asan ubsan tsan valgrind)
#   -r  runs per cell (default 3: a thread-only failure may not show at once)
#   -o  where regressions go (default corpus/regressions)
#   -M  do not minimize;  -W  do not write the regression file
# Work files: $BUILD/triage/<id>/ (logs, the minimized input, the stack).
# Exit: 0 when the input failed somewhere and was triaged, 1 when it
# reproduced nowhere, 2 on a usage error or a tool missing.
set -uo pipefail
CALLER_PWD=$PWD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
QT_WHO=triage
. qemu-targets/lib.sh

usage() { sed -n '/^#   fuzz\/triage.sh/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "triage: $*" >&2; exit 2; }

read -r -a all_targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
target="" arches=$(qt_all | xargs) variants="release asan ubsan tsan valgrind" runs=3
regdir=corpus/regressions minimize=1 write=1
while getopts "t:a:v:r:o:MWh" o; do
  case $o in
    t) target=$OPTARG ;;
    a) arches=$OPTARG ;;
    v) variants=$OPTARG ;;
    r) runs=$OPTARG ;;
    o) regdir=$OPTARG ;;
    M) minimize=0 ;;
    W) write=0 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
input=$1
# A relative INPUT is relative to where the script was started.
[[ $input == /* ]] || [ -e "$input" ] || input=$CALLER_PWD/$input
[ -f "$input" ] && [ -r "$input" ] || die "INPUT '$input' is not a readable file"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "-r RUNS must be a positive number, not '$runs'"
for v in $variants; do
  case $v in release | asan | ubsan | tsan | valgrind) ;; *) die "unknown variant '$v' (release asan ubsan tsan valgrind)" ;; esac
done
for a in $arches; do [ -f "qemu-targets/$a" ] || die "unknown arch '$a' (targets: $(qt_all | xargs))"; done

# ---- which target ---------------------------------------------------------
if [ -z "$target" ]; then
  abs=$(realpath "$input")
  for t in "${all_targets[@]}"; do
    case $abs in
      */corpus/"$t"/* | */corpus/regressions/"$t"/* | */"$t"/crashes/*) target=$t ;;
    esac
  done
  [ -z "$target" ] && [ -f "$input.repro.sh" ] &&
    target=$(sed -n 's/^# vigil fuzz finding: target \([a-z]*\),.*/\1/p' "$input.repro.sh")
  [ -n "$target" ] || die "cannot tell INPUT's target from its path: give TARGET= (one of ${all_targets[*]})"
fi
[[ " ${all_targets[*]} " == *" $target "* ]] || die "unknown target '$target' (${all_targets[*]})"

# ---- tools ----------------------------------------------------------------
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2 (bash ci/deps.sh triage)"; }
need clang clang
need sha1sum coreutils
[[ " $variants " == *" valgrind "* ]] && need valgrind valgrind
need gdb gdb
[ -n "$arches" ] && need gdb-multiarch gdb-multiarch

mk() { env -u MAKEFLAGS -u MFLAGS -u MAKEOVERRIDES "$MAKE" -s --no-print-directory BUILD="$BUILD" "$@"; }
mk "$BUILD/fuzz/replay/$target" "$BUILD/vigil-ops" >/dev/null || die "the replay driver does not build: make $BUILD/fuzz/replay/$target"

# The input in binary form (a .ops file is assembled), named by its hash.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vigil-triage.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
case $input in
  *.ops) "$BUILD/fuzz/replay/$target" -q -A "$tmp/asm" "$input" >/dev/null || die "$input does not assemble"
         bin=$(find "$tmp/asm" -type f | head -n1) ;;
  *) bin=$input ;;
esac
id=$(sha1sum "$bin" | cut -c1-12)
W=$BUILD/triage/$target-$id
rm -rf "$W" && mkdir -p "$W/logs"
cp "$bin" "$W/input"
in=$W/input

# ops_of FILE: its ops as text, without vigil-ops' header comment.
ops_of() { "$BUILD/vigil-ops" print --target "$target" "$1" 2>/dev/null | grep -v '^#'; }
threaded=no
"$BUILD/vigil-ops" print --target "$target" "$in" >"$W/input.ops" 2>/dev/null &&
  grep -q '^spawn ' "$W/input.ops" && threaded=yes
echo "triage: $input: target $target, $(grep -c '^[a-z]' "$W/input.ops") ops, threads: $threaded; work in $W"

# ---- one run and what it says ---------------------------------------------
HANG=${TRIAGE_TIMEOUT:-120}
export ASAN_OPTIONS=detect_leaks=0:handle_abort=1:allocator_may_return_null=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:exitcode=66:report_signal_unsafe=0
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || echo)}
# Valgrind's own errors exit 99; --child-silent-after-fork: the fork target's
# children are judged by the parent.
VALGRIND=(valgrind -q --error-exitcode=99 --child-silent-after-fork=yes --fair-sched=yes)

# run_to LOG COMMAND...: COMMAND's status, its output in LOG, within HANG
# seconds (the braces keep bash's "Aborted" job notices off the terminal).
run_to() {
  local log=$1
  shift
  { timeout -k 5 "$HANG" "$@" >"$log" 2>&1; } 2>/dev/null
}

# outcome RC LOG: pass, or a short kind (the signal, race, valgrind, exit N,
# hang) then ': ' and the first line that says what went wrong.
outcome() {
  local rc=$1 log=$2 kind line
  case $rc in
    0) echo pass; return ;;
    124 | 137) kind=hang ;;
    66) kind=race ;;
    99) kind=valgrind ;;
    126 | 127) kind="cannot run" ;;
    *) if [ "$rc" -gt 128 ]; then kind=SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128))); else kind="exit $rc"; fi ;;
  esac
  # A sanitizer's own line first: in the ASan build vigil prints its history
  # of the block ("vigil: 0x... is N bytes after ...") before ASan's report.
  line=$(grep -m1 -E 'ERROR: AddressSanitizer|WARNING: MemorySanitizer|runtime error|WARNING: ThreadSanitizer' "$log" ||
    grep -m1 -E 'vigil oracle|vigil: |corrupt: |Invalid (read|write|free)|Process terminating|qemu: uncaught' "$log")
  line=$(cut -c1-140 <<<"$line")
  echo "$kind${line:+: $line}"
}
# The part of an outcome that must match for "the same failure": the kind
# and the message, without the op the oracle names (a smaller input reaches
# the same bug through other ops) and with addresses and numbers blanked.
signature() { sed -E "s/op #[0-9]+ '[^']*'//; s/0x[0-9a-f]+/0x?/g; s/[0-9]+/N/g" <<<"$1"; }

# cell NAME COMMAND...: RUNS runs of COMMAND INPUT; sets cell_fail (how many
# failed), cell_out (the first failure's outcome, else pass), cell_log.
cell() {
  local name=$1 i rc o
  shift
  cell_fail=0 cell_out=pass cell_log=$W/logs/$name.log
  : >"$cell_log"
  for ((i = 1; i <= runs; i++)); do
    run_to "$W/logs/$name.$i.log" "$@" "$in"
    rc=$?
    o=$(outcome $rc "$W/logs/$name.$i.log")
    if [ "$o" != pass ]; then
      cell_fail=$((cell_fail + 1))
      if [ "$cell_out" = pass ]; then cell_out=$o; cp "$W/logs/$name.$i.log" "$cell_log"; fi
    fi
  done
  [ "$cell_out" = pass ] && cp "$W/logs/$name.1.log" "$cell_log"
  rm -f "$W/logs/$name".[0-9]*.log
}

# ---- the matrix -----------------------------------------------------------
rows=() repro=() passed=()
declare -A CMD OUT
add_row() { # NAME OUTCOME FAILS COMMAND...
  local name=$1 o=$2 k=$3
  shift 3
  rows+=("$(printf '%-22s %-7s %s' "$name" "$k/$runs" "$o")")
  if [ "$k" -gt 0 ]; then repro+=("$name"); else passed+=("$name"); fi
  CMD[$name]=$(printf '%q ' "$@")
  OUT[$name]=$o
}
not_built() { rows+=("$(printf '%-22s %-7s %s' "$1" - "not built: $2")"); }

host_bin() { case $1 in release | valgrind) echo "$BUILD/fuzz/replay/$target" ;; *) echo "$BUILD/fuzz/replay-$1/$target" ;; esac; }
for v in $variants; do
  b=$(host_bin "$v")
  if ! mk "$b" >"$W/logs/build-$v.log" 2>&1; then not_built "host $v" "see $W/logs/build-$v.log"; continue; fi
  cmd=("$b" -q)
  [ "$v" = valgrind ] && cmd=("${VALGRIND[@]}" "$b" -q)
  cell "host-$v" "${cmd[@]}"
  if [ "$v" = valgrind ] && [[ $cell_out == hang* ]]; then
    # About 100 times slower: the fork regression takes 9 minutes there.
    # A timeout under Valgrind alone says nothing either way.
    rows+=("$(printf '%-22s %-7s %s' "host $v" - "inconclusive: over $HANG s under Valgrind (TRIAGE_TIMEOUT=)")")
    continue
  fi
  add_row "host $v" "$cell_out" "$cell_fail" "${cmd[@]}"
done

# ARCH_OF, PS_OF: a QEMU row's arch and page size; RV_OF: set for the rows
# under -R (the target's RESERVED_VA); LF_OF: set for the libFuzzer row.
declare -A ARCH_OF PS_OF RV_OF LF_OF
for a in $arches; do
  qt_load "$a" >"$W/logs/qemu-$a.load" 2>&1 && qt_tools "$a" >>"$W/logs/qemu-$a.load" 2>&1 || {
    not_built "$a" "$(tail -n1 "$W/logs/qemu-$a.load")"; continue; }
  if ! qt_build "$a"; then not_built "$a" "see $QT_OUT/build.log"; continue; fi
  for ps in $T_PAGESIZES; do
    qt_runner "$ps"
    name="$a p$((ps / 1024))k"
    cell "qemu-$a-$ps" "${QT_RUN[@]}" "$QT_OUT/replay/$target" -q
    add_row "$name" "$cell_out" "$cell_fail" "${QT_RUN[@]}" "$QT_OUT/replay/$target" -q
    ARCH_OF[$name]=$a PS_OF[$name]=$ps
  done
  [ -n "$T_RESERVED_VA" ] || continue
  # Under -R (qemu-targets/README.md, "Known QEMU bugs"): the same binary at
  # the first page size, then the libFuzzer build (aarch64: qemu.mk builds
  # no other), with fuzz.sh's options.
  ps=${T_PAGESIZES%% *}
  qt_runner "$ps" R
  name="$a -R p$((ps / 1024))k"
  cell "qemu-$a-R-$ps" "${QT_RUN[@]}" "$QT_OUT/replay/$target" -q
  add_row "$name" "$cell_out" "$cell_fail" "${QT_RUN[@]}" "$QT_OUT/replay/$target" -q
  ARCH_OF[$name]=$a PS_OF[$name]=$ps RV_OF[$name]=1
  [ "$a" = aarch64 ] || continue
  name="$a -R libFuzzer"
  qt_lf_missing
  lfb=$BUILD/qemu-fuzz/build-aarch64/bin/$target
  if [ ${#QT_LF_MISSING[@]} -gt 0 ]; then
    not_built "$name" "missing ${QT_LF_MISSING[*]} (Debian packages $QT_LF_PACKAGES: bash ci/deps.sh qemu-fuzz)"
    continue
  fi
  if ! mk -j2 "$lfb" >"$W/logs/build-qemu-libfuzzer.log" 2>&1; then
    not_built "$name" "see $W/logs/build-qemu-libfuzzer.log"; continue
  fi
  qt_lf_runner
  cell "qemu-$a-R-libfuzzer" "${QT_LF_RUN[@]}" "$lfb" -rss_limit_mb=0 -timeout="$HANG"
  add_row "$name" "$cell_out" "$cell_fail" "${QT_LF_RUN[@]}" "$lfb" -rss_limit_mb=0 -timeout="$HANG"
  ARCH_OF[$name]=$a RV_OF[$name]=1 LF_OF[$name]=1
done

echo
echo "reproduction matrix ($runs runs a cell; k/$runs = runs that failed):"
printf '%-22s %-7s %s\n' where fails "first failure"
printf '%s\n' "${rows[@]}"
{ printf '%-22s %-7s %s\n' where fails "first failure"; printf '%s\n' "${rows[@]}"; } >"$W/matrix.txt"
echo

if [ ${#repro[@]} -eq 0 ]; then
  echo "triage: $input reproduces nowhere in $runs runs a cell: nothing to minimize or record"
  echo "triage: (state from earlier inputs of a fuzzing run? try the crash's .repro.sh, or more runs: RUNS=20)"
  exit 1
fi

# ---- classification -------------------------------------------------------
in_list() { local x; for x in "${@:2}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
classes=()
# qemu_r, qemu_p: the QEMU rows that failed, passed; plain_r, plain_p: those
# without -R; rv_r: the -R rows that failed.
host_r=() host_p=() qemu_r=() qemu_p=() plain_r=() plain_p=() rv_r=()
for n in "${repro[@]}"; do case $n in host*) host_r+=("$n") ;; *) qemu_r+=("$n") ;; esac; done
for n in "${passed[@]}"; do case $n in host*) host_p+=("$n") ;; *) qemu_p+=("$n") ;; esac; done
for n in "${qemu_r[@]}"; do if [ -n "${RV_OF[$n]:-}" ]; then rv_r+=("$n"); else plain_r+=("$n"); fi; done
for n in "${qemu_p[@]}"; do [ -n "${RV_OF[$n]:-}" ] || plain_p+=("$n"); done
# emulator suspected: only rows under -R fail, and each of their arches
# passes without -R (the same binary), and no host build fails.
emulator=no
if [ ${#rv_r[@]} -gt 0 ] && [ ${#plain_r[@]} -eq 0 ] && [ ${#host_r[@]} -eq 0 ]; then
  emulator=yes
  for a in $(for n in "${rv_r[@]}"; do echo "${ARCH_OF[$n]}"; done | sort -u); do
    ok=no
    for n in "${plain_p[@]}"; do [ "${ARCH_OF[$n]}" = "$a" ] && ok=yes; done
    [ $ok = yes ] || emulator=no
  done
fi
if [ ${#passed[@]} -eq 0 ]; then classes+=("everywhere (every cell that ran)")
elif [ $emulator = yes ]; then
  classes+=("emulator suspected (QEMU reserved_va, see qemu-targets/README.md): fails only under qemu -R ($(printf '%s, ' "${rv_r[@]}" | sed 's/, $//')), passes without -R and on every host build")
else
  # architecture-only: some QEMU targets fail without -R, and no host build
  # does.
  if [ ${#plain_r[@]} -gt 0 ] && [ ${#host_r[@]} -eq 0 ]; then
    fa=$(for n in "${plain_r[@]}"; do echo "${ARCH_OF[$n]}"; done | sort -u | xargs)
    classes+=("architecture-only ($fa)")
  fi
  # page-size-only: within one arch, some page sizes fail and others pass;
  # or only the arches run above 4 KiB fail.  (The rows without -R.)
  for a in $(for n in "${plain_r[@]}"; do echo "${ARCH_OF[$n]}"; done | sort -u); do
    bad_ps=() good_ps=()
    for n in "${plain_r[@]}"; do [ "${ARCH_OF[$n]}" = "$a" ] && bad_ps+=("${PS_OF[$n]}"); done
    for n in "${plain_p[@]}"; do [ "${ARCH_OF[$n]}" = "$a" ] && good_ps+=("${PS_OF[$n]}"); done
    [ ${#good_ps[@]} -gt 0 ] && classes+=("page-size-only ($a fails at ${bad_ps[*]}, passes at ${good_ps[*]})")
  done
  # sanitizer-only: only a sanitizer or Valgrind sees it (on the host, or
  # the libFuzzer build under QEMU: ASan+UBSan too).
  static_r=()
  for n in "${qemu_r[@]}"; do [ -n "${LF_OF[$n]:-}" ] || static_r+=("$n"); done
  if [ ${#host_r[@]} -gt 0 ] && [ ${#static_r[@]} -eq 0 ] && ! in_list "host release" "${host_r[@]}"; then
    classes+=("sanitizer-only (${host_r[*]#host })")
  fi
fi
flaky=0
for r in "${rows[@]}"; do [[ $r =~ \ ([1-9][0-9]*)/$runs\  ]] && [ "${BASH_REMATCH[1]}" -lt "$runs" ] && flaky=1; done
if [ $threaded = yes ] && { [ $flaky = 1 ] || in_list "host tsan" "${host_r[@]}"; }; then
  classes+=("thread-only (threaded input, $([ $flaky = 1 ] && echo "fails in some runs only" || echo "TSan reports it"))")
fi
race=no
[[ ${OUT[host tsan]:-} == race* ]] && race=yes
weak=$(for n in "${plain_r[@]}"; do case ${ARCH_OF[$n]} in aarch64 | ppc64le | riscv64 | armhf) echo "${ARCH_OF[$n]}" ;; esac; done | sort -u | xargs)
if [ $race = yes ]; then classes+=("ordering suspected (ThreadSanitizer reports a data race)")
elif [ $threaded = yes ] && [ -n "$weak" ] && ! in_list "host release" "${host_r[@]}"; then
  classes+=("ordering suspected (threaded, fails on weakly ordered $weak only)")
fi
[ ${#classes[@]} -gt 0 ] || classes+=("variant-dependent (see the matrix)")
class=$(printf '%s; ' "${classes[@]}")
class=${class%; }
echo "classification: $class"

# The reference: the first failing cell in this order: the host's plain
# build, its sanitizer builds, the QEMU targets, Valgrind (whose own
# allocator replacement can fail where nothing else does).
ref=""
for n in "host release" "host asan" "host ubsan" "host tsan" "${qemu_r[@]}" "host valgrind"; do
  in_list "$n" "${repro[@]}" && { ref=$n; break; }
done
ref_sig=$(signature "${OUT[$ref]}")
eval "ref_cmd=(${CMD[$ref]})"
echo "reference: $ref: ${OUT[$ref]}"

# ---- minimization ---------------------------------------------------------
# same_failure FILE: does the reference command fail on FILE as it did on INPUT?
same_failure() {
  local i rc
  for ((i = 1; i <= runs; i++)); do
    run_to "$W/logs/check.log" "${ref_cmd[@]}" "$1"
    rc=$?
    [ $rc -ne 0 ] && [ "$(signature "$(outcome $rc "$W/logs/check.log")")" = "$ref_sig" ] && return 0
  done
  return 1
}
min=$in how="not minimized"
if [ $minimize = 1 ]; then
  lf=$BUILD/fuzz/libfuzzer/$target afl=$BUILD/fuzz/afl/$target
  if mk "$lf" >"$W/logs/build-libfuzzer.log" 2>&1 &&
     ! run_to "$W/logs/libfuzzer-check.log" "$lf" -runs=3 "$in"; then
    # -minimize_crash keeps any crash, so its last step may fail another
    # way (usable-minus-16's 226-byte input became a 4-byte "double free").
    # Each step is kept (minimized-from-<hash> under the artifact prefix):
    # the smallest one that fails as the reference does is the result.
    rm -rf "$W/minsteps" && mkdir -p "$W/minsteps"
    run_to "$W/logs/minimize.log" "$lf" -minimize_crash=1 -max_total_time="${TRIAGE_MINIMIZE_SECONDS:-60}" \
      -timeout=20 -artifact_prefix="$W/minsteps/" "$in"
    step=""
    while read -r _ f; do
      if same_failure "$f"; then step=$f; break; fi
    done < <(find "$W/minsteps" -type f -name 'minimized-from-*' -printf '%s %p\n' | sort -n)
    if [ -n "$step" ]; then cp "$step" "$W/min" && how="libFuzzer -minimize_crash"
    elif [ -n "$(ls -A "$W/minsteps")" ]; then how="libFuzzer -minimize_crash gave only inputs that fail differently; kept the original"; fi
  elif ! command -v afl-tmin >/dev/null; then
    how="not minimized: the libFuzzer build does not reproduce it, and afl-tmin is missing (Debian package afl++)"
  elif mk "$afl" >"$W/logs/build-afl.log" 2>&1 &&
       ! run_to "$W/logs/afl-check.log" "$afl" "$in"; then
    # The AFL++ build, reading stdin under afl-tmin (given a file argument,
    # its driver runs the file before the fork server starts).
    # (afl-tmin insists on abort_on_error and no symbolizing.)
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:symbolize=0 \
      run_to "$W/logs/minimize.log" afl-tmin -t $((HANG * 1000)) -i "$in" -o "$W/min.tmin" -- "$afl"
    [ -s "$W/min.tmin" ] && cp "$W/min.tmin" "$W/min" && how="afl-tmin on the AFL++ build"
  else
    how="not minimized: neither the libFuzzer nor the AFL++ build reproduces it on the host (it needs: ${repro[*]})"
  fi
  if [ -s "$W/min" ]; then
    if same_failure "$W/min"; then min=$W/min
    else how="$how gave an input that fails differently; kept the original"; fi
  fi
fi
echo "minimized: $(stat -c %s "$in") -> $(stat -c %s "$min") bytes ($how)"

# ---- the stack ------------------------------------------------------------
# A sanitizer's own report when the failure is one (the replay main's fatal
# signal handler comes before a sanitizer's, so an oracle abort is not);
# else gdb on the host build that fails; else gdb-multiarch on QEMU's stub.
# until_seen SIGN LOG COMMAND...: runs COMMAND until LOG shows SIGN (an
# ERE), at most max(RUNS, 5) times: a failure that shows in some runs only
# must still give its stack.
until_seen() {
  local sign=$1 log=$2 i
  shift 2
  for ((i = 0; i < (runs > 5 ? runs : 5); i++)); do
    run_to "$log" "$@"
    grep -qE "$sign" "$log" && return 0
  done
  return 1
}
stack() {
  local frames='^ +#[0-9]+ |^#[0-9]+ |ERROR: |SUMMARY|runtime error|vigil oracle|vigil: '
  if [[ ${OUT[host asan]:-} == *AddressSanitizer* ]]; then
    echo "(the ASan build's report, host)"
    until_seen 'ERROR: AddressSanitizer' "$W/logs/stack.log" "$BUILD/fuzz/replay-asan/$target" -q "$min"
    # ASan's report first, then vigil's history of the block, which vigil
    # prints before it (src/history.c).
    grep -E "$frames" "$W/logs/stack.log" |
      awk '/ERROR: AddressSanitizer/ { e = 1 } e { print; next } { pre[n++] = $0 }
           END { for (i = 0; i < n; i++) print (i ? "" : "(vigil'"'"'s history of the block)\n") pre[i] }' | head -n 60
  elif [[ ${OUT[host ubsan]:-} == *"runtime error"* ]]; then
    echo "(the UBSan build's report, host)"
    until_seen 'runtime error' "$W/logs/stack.log" "$BUILD/fuzz/replay-ubsan/$target" -q "$min"
    grep -E "$frames" "$W/logs/stack.log" | head -n 40
  elif [[ ${OUT[host tsan]:-} == race* ]]; then
    echo "(the TSan build's report, host)"
    until_seen 'WARNING: ThreadSanitizer' "$W/logs/stack.log" "$BUILD/fuzz/replay-tsan/$target" -q "$min"
    grep -E "$frames|WARNING: ThreadSanitizer|(Previous )?(write|read|atomic).* of size|Thread T[0-9]+ .*created" "$W/logs/stack.log" | head -n 40
  elif [[ $ref == host* ]]; then
    local v=${ref#host }
    [ "$v" = valgrind ] && v=release
    echo "(gdb, the host $v build)"
    until_seen '^#0 ' "$W/logs/stack.log" gdb -q -batch -ex run -ex bt --args "$(host_bin "$v")" -q "$min" </dev/null
    grep -E "$frames" "$W/logs/stack.log" | head -n 40
  elif [ -n "${LF_OF[$ref]:-}" ]; then
    echo "(the libFuzzer build's report, under qemu-${ARCH_OF[$ref]} -R)"
    until_seen 'ERROR: |runtime error|vigil oracle|vigil: ' "$W/logs/stack.log" "${ref_cmd[@]}" "$min"
    grep -E "$frames" "$W/logs/stack.log" | head -n 40
  else
    # The guest waits on QEMU's gdb stub for gdb-multiarch, which runs it to
    # the fatal signal and prints the backtrace.
    local port=$((20000 + RANDOM % 20000)) a=${ARCH_OF[$ref]} ps=${PS_OF[$ref]} rv=()
    qt_load "$a" >/dev/null
    [ -n "${RV_OF[$ref]:-}" ] && rv=(-R "$T_RESERVED_VA")
    echo "(gdb-multiarch on qemu-$a ${rv[*]}${rv:+ }-g, page size $ps)"
    { timeout "$HANG" "$T_QEMU" "${rv[@]}" -L "$T_SYSROOT" -p "$ps" -g "$port" "$BUILD/qemu/$a/replay/$target" -q "$min" \
        >"$W/logs/stack-guest.log" 2>&1 & } 2>/dev/null
    local qpid=$!
    sleep 1
    run_to "$W/logs/stack.log" gdb-multiarch -q -batch -ex "set sysroot $T_SYSROOT" -ex "target remote :$port" \
      -ex continue -ex bt "$BUILD/qemu/$a/replay/$target" </dev/null
    grep -E "$frames" "$W/logs/stack.log" "$W/logs/stack-guest.log" -h | head -n 40
    { kill "$qpid"; wait "$qpid"; } 2>/dev/null
  fi
}
stack >"$W/stack.txt" 2>&1
echo "stack $(head -n1 "$W/stack.txt"):"
tail -n +2 "$W/stack.txt" | head -n 25 | sed 's/^/  /'
[ "$(wc -l <"$W/stack.txt")" -gt 1 ] || echo "  (no frames: see the logs in $W/logs)"

# ---- the regression file --------------------------------------------------
mid=$(sha1sum "$min" | cut -c1-12)
dest=$regdir/$target/triage-$mid.ops
"$BUILD/vigil-ops" print --target "$target" "$min" >"$W/min.ops" 2>/dev/null
if [ $write = 1 ]; then
  mkdir -p "$(dirname "$dest")"
  { echo "# $(basename "$dest"): written by make triage on $(date -u +%F) from $(basename "$input")"
    echo "# $class"
    echo "# reference ($ref): ${OUT[$ref]}"
    [ "$target" = edge ] && echo "# (edge maps each size and alignment below through its tables in fuzz/edge.c)"
    grep -v '^# .*: [0-9]* ops from' "$W/min.ops"
  } >"$dest"
  # The text form only if it assembles back to the same ops (the bytes may
  # differ: the text names sizes, not the bytes that chose them); else binary.
  "$BUILD/fuzz/replay/$target" -q -A "$tmp/back" "$dest" >/dev/null 2>&1
  back=$(find "$tmp/back" -type f 2>/dev/null | head -n1)
  if [ -z "$back" ] || ! cmp -s <(ops_of "$min") <(ops_of "$back"); then
    rm -f "$dest"
    dest=${dest%.ops}
    cp "$min" "$dest"
  fi
  fails_in=$(printf '%s, ' "${repro[@]}")
  # One line per file: triaging the same input again replaces its line.
  notes=$regdir/$target/NOTES
  [ -f "$notes" ] && { grep -vF "$(basename "$dest"): " "$notes" >"$tmp/notes"; cat "$tmp/notes" >"$notes"; }
  echo "$(basename "$dest"): $class; fails in: ${fails_in%, }; ${OUT[$ref]} (make triage, $(date -u +%F); say the cause here once known)" \
    >>"$regdir/$target/NOTES"
  echo "wrote $dest and a line in $regdir/$target/NOTES"
else
  echo "not written (-W): would be $dest"
fi
echo "matrix, logs, minimized input and stack: $W/"
variant=release
case $ref in host\ asan) variant=asan ;; host\ ubsan) variant=ubsan ;; host\ tsan) variant=tsan ;; esac
bisect_args=(-t "$target" -r "$runs")
if [ -n "${RV_OF[$ref]:-}" ]; then
  # fuzz/bisect.sh runs the static build at one page size, without -R.
  echo "no bisect command: only qemu -R reproduces it, which fuzz/bisect.sh does not run$([ $emulator = yes ] &&
    echo " (emulator suspected: qemu-targets/README.md, Known QEMU bugs)")"
  exit 0
fi
if [[ $ref == host* ]]; then bisect_args+=(-v "$variant")
else bisect_args+=(-a "${ARCH_OF[$ref]}" -p "${PS_OF[$ref]}"); fi
echo "find the commit that introduced it: fuzz/bisect.sh ${bisect_args[*]} $W/input GOOD_COMMIT [BAD_COMMIT]"
exit 0
