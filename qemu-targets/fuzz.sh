#!/usr/bin/env bash
# Fuzzing on the QEMU targets: `make qemu-fuzz` runs
#   qemu-targets/fuzz.sh [-s SECONDS | -n EXECS] [-S SEED] [-t "TARGETS"] [ARCH...]
# (default: 60 s, every target of fuzz/fuzz.mk, all six arches).
# SECONDS is the time of one (arch, target) run, as in `make fuzz`; runs go
# one after the other.  -n: a fixed count instead, EXECS executions a run
# (the seeds included), from SEED (default 1) and the seeds alone, so the
# same tree runs the same inputs every time (libFuzzer -seed -runs, from an
# empty corpus/ of its own; replay -M -s -r); a run that cannot finish its
# count within COUNT_CAP seconds is an error.  -S SEED with -s: a seeded
# campaign.  For each ARCH (a file qemu-targets/ARCH):
#   aarch64  libFuzzer (coverage-guided, ASan+UBSan), built by clang for
#            aarch64 (qemu.mk's qemu-fuzz section), under qemu-aarch64
#   others   the replay driver's mutation mode (replay -M: random mutations
#            of the corpus, no coverage), the cross build of qemu.mk, under
#            qemu-ARCH -p PAGESIZE (the target's largest page size)
# Work goes to $BUILD/qemu-fuzz/ARCH/TARGET/ (corpus/ for libFuzzer, which
# grows from run to run, or with -n fixed-corpus/, emptied first; crashes/;
# log).  Prints a table, then each crash's
# file and the command that reproduces it.  Exit status 1 on a crash or an
# error, else 0.
set -u
cd "$(dirname "$0")/.." || exit 1
QT_WHO=qemu-fuzz
. qemu-targets/lib.sh
HANG=30 # seconds one input may take (the fork and corrupt targets give a child 10-20 s)
# Seeds (as replay -A names them) left out of the libFuzzer runs: slower
# than HANG under qemu-aarch64 and ASan, so that every run would end on them.
# fork-storm forks 150 times, about 1.7 s a fork there: 4 min 16 s alone
# (2026-12-05).  The mutation runs keep them.
LF_SLOW_SEEDS="corpus_fork_fork-storm"
COUNT_CAP=600 # -n: the seconds a run may take to make its count
seconds=60 execs_n="" seed_n="" targets="" given_s=""
usage() {
  echo "usage: $0 [-s SECONDS | -n EXECS] [-S SEED] [-t \"TARGET...\"] [ARCH...]" >&2
  echo "       (make qemu-fuzz SECONDS= | EXECS= [SEED=] ARCHES= FUZZ_TARGETS=)" >&2
  exit 2
}
while getopts s:n:S:t:h o; do
  case $o in
    s) seconds=$OPTARG given_s=1 ;;
    n) execs_n=$OPTARG ;;
    S) seed_n=$OPTARG ;;
    t) targets=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "qemu-fuzz: SECONDS must be a positive whole number, not '$seconds'" >&2; exit 2; }
if [ -n "$execs_n" ]; then
  [ -z "$given_s" ] || { echo "qemu-fuzz: -s SECONDS and -n EXECS do not go together (a run is timed or counted)" >&2; exit 2; }
  [[ $execs_n =~ ^[1-9][0-9]{0,8}$ ]] || { echo "qemu-fuzz: EXECS must be a positive whole number, not '$execs_n'" >&2; exit 2; }
  seed_n=${seed_n:-1}
fi
# (libFuzzer takes -seed=0 as "pick one")
[ -z "$seed_n" ] || [[ $seed_n =~ ^[1-9][0-9]{0,8}$ ]] ||
  { echo "qemu-fuzz: SEED must be a whole number from 1 to 999999999, not '$seed_n'" >&2; exit 2; }
[ $# -gt 0 ] || set -- $(qt_all)
all_targets=$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)
read -r -a targets <<<"${targets:-$all_targets}"
for t in "${targets[@]}"; do
  [[ " $all_targets " == *" $t "* ]] || { echo "qemu-fuzz: unknown target '$t' (fuzz/fuzz.mk: $all_targets)" >&2; exit 2; }
done
# libFuzzer's sanitizers: each target's ASan options as fuzz/run.sh gives
# them (fuzz/sanitizer_options.sh: a small quarantine where inputs fork),
# set per target below, but LSan off (it cannot run under QEMU).
. fuzz/sanitizer_options.sh
export UBSAN_OPTIONS=print_stacktrace=1

# The tools of every arch first: nothing runs if one is missing.
bad=0
for arch in "$@"; do
  qt_load "$arch" && qt_tools "$arch" || { bad=1; continue; }
  missing=() pkgs=$T_PACKAGES
  if [ "$arch" = aarch64 ]; then
    pkgs+=" $QT_LF_PACKAGES"
    qt_lf_missing
    missing=("${QT_LF_MISSING[@]}")
    [ -n "$T_RESERVED_VA" ] || missing+=("RESERVED_VA in qemu-targets/aarch64 (libFuzzer's -R)")
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "qemu-fuzz: $arch: missing ${missing[*]}"
    echo "qemu-fuzz:   install the Debian packages $pkgs (bash ci/deps.sh qemu-fuzz)"
    bad=1
  fi
done
[ $bad -eq 0 ] || exit 1

work=$BUILD/qemu-fuzz
mkdir -p "$work"
rows=() details=() failed=0
nomake() { env -u MAKEFLAGS -u MFLAGS -u MAKEOVERRIDES "$@"; }
# The host replay driver assembles the *.ops seeds for libFuzzer (replay -A).
nomake "$MAKE" -s -j2 "BUILD=$BUILD" fuzz-replay-build >"$work/build-host.log" 2>&1 ||
  { echo "qemu-fuzz: the host replay build failed:"; tail -n 20 "$work/build-host.log"; exit 1; }

# row ARCH TARGET ENGINE SECS EXECS CRASHES RESULT
row() { rows+=("$(printf '%-8s %-8s %-9s %5s %9s %8s %7s  %s' "$1" "$2" "$3" "$4" "$5" \
                   "$(awk -v e="$5" -v s="$4" 'BEGIN { if (e ~ /^[0-9]+$/ && s > 0) printf "%.0f", e / s; else print "-" }')" \
                   "$6" "$7")"); }
q() { printf '%q ' "$@"; }

for arch in "$@"; do
  qt_load "$arch"
  ps=${T_PAGESIZES##* }
  if [ "$arch" = aarch64 ]; then
    engine=libfuzzer
    bins=(); for t in "${targets[@]}"; do bins+=("$BUILD/qemu-fuzz/build-aarch64/bin/$t"); done
    bcmd=("$MAKE" -s -j2 "BUILD=$BUILD" "${bins[@]}")
  else
    engine=mutate
  fi
  mkdir -p "$work/$arch"
  echo "qemu-fuzz: $arch: building ($engine)"
  if [ $engine = mutate ]; then
    qt_build "$arch"
    brc=$?
    bcmd=("${QT_BUILD_CMD[@]}")
    cp "$QT_OUT/build.log" "$work/$arch/build.log"
  else
    nomake "${bcmd[@]}" >"$work/$arch/build.log" 2>&1
    brc=$?
  fi
  if [ $brc -ne 0 ]; then
    failed=$((failed + 1))
    for t in "${targets[@]}"; do row "$arch" "$t" "$engine" - - - "error: build failed"; done
    details+=("---- $arch: the build failed: $(q "${bcmd[@]}")
$(tail -n 15 "$work/$arch/build.log" | sed 's/^/     | /')")
    continue
  fi
  for t in "${targets[@]}"; do
    dir=$work/$arch/$t log=$work/$arch/$t/log
    mkdir -p "$dir/crashes"
    seeds=()
    for d in "corpus/$t" "corpus/regressions/$t"; do [ -d "$d" ] && seeds+=("$d"); done
    before=$(ls "$dir/crashes" | wc -l)
    if [ -n "$execs_n" ]; then echo "qemu-fuzz: $arch/$t: $engine, $execs_n execs, seed $seed_n"
    else echo "qemu-fuzz: $arch/$t: $engine, $seconds s${seed_n:+, seed $seed_n}"; fi
    start=$(date +%s.%N)
    export ASAN_OPTIONS=$(fuzz_asan_options "$t" 0)
    if [ $engine = libfuzzer ]; then
      # qemu-aarch64 -R -E LD_LIBRARY_PATH=/lib, and -rss_limit_mb=0: why,
      # in lib.sh (qt_lf_runner).
      qt_lf_runner
      q=("${QT_LF_RUN[@]}")
      rm -rf "$dir/seeds"
      "$BUILD/fuzz/replay/$t" -A "$dir/seeds" "${seeds[@]}" >/dev/null
      for s in $LF_SLOW_SEEDS; do
        [ -e "$dir/seeds/$s" ] || continue
        rm -f "$dir/seeds/$s"
        echo "qemu-fuzz: $arch/$t: seed $s left out (slower than the ${HANG} s timeout under QEMU and ASan)"
      done
      if [ -n "$execs_n" ]; then
        # Counted: from the seeds only, into a corpus emptied first (the
        # campaign's corpus/ is not read); -reload=0: nothing else writes it.
        lcorpus=$dir/fixed-corpus
        rm -rf "$lcorpus"
        # -report_slow_units past -timeout: a slow unit (a loaded machine
        # under QEMU and ASan) is timing, not a finding; hangs still are.
        limit=(-seed="$seed_n" -runs="$execs_n" -max_total_time=$COUNT_CAP -reload=0
               -report_slow_units=$((HANG * 10)))
      else
        lcorpus=$dir/corpus
        limit=(-max_total_time="$seconds" ${seed_n:+-seed="$seed_n"})
      fi
      mkdir -p "$lcorpus"
      cmd=("${q[@]}" "$BUILD/qemu-fuzz/build-aarch64/bin/$t" "${limit[@]}" -timeout=$HANG
           -rss_limit_mb=0 -close_fd_mask=1 -print_final_stats=1 -artifact_prefix="$dir/crashes/"
           "$lcorpus" "$dir/seeds")
    else
      seed=${seed_n:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
      qt_runner "$ps"
      q=("${QT_RUN[@]}")
      if [ -n "$execs_n" ]; then limit=(-M $COUNT_CAP -r "$execs_n")
      else limit=(-M "$seconds"); fi
      cmd=("${q[@]}" "$BUILD/qemu/$arch/replay/$t" -q "${limit[@]}" -s "$seed" -t $HANG -o "$dir/crashes" "${seeds[@]}")
    fi
    cap=$seconds
    [ -n "$execs_n" ] && cap=$COUNT_CAP
    # (braces: no "Aborted" job notice from bash when the run crashes)
    { timeout -k 5 $((cap + HANG + 120)) "${cmd[@]}" >"$log" 2>&1; } 2>/dev/null
    rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    if [ $engine = libfuzzer ]; then
      execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
      # crashes: this run's new files (libFuzzer names them by content)
      new=$(($(ls "$dir/crashes" | wc -l) - before))
      files=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log")
      ok_line=$(grep -c '^Done [0-9]* runs' "$log")
    else
      execs=$(sed -n 's/^mutate: \([0-9]*\) execs in .*/\1/p' "$log" | tail -n1)
      [ -n "$execs" ] || execs=$(sed -n 's/.*(exec \([0-9]*\):.*/\1/p' "$log" | tail -n1)
      files=$(sed -n 's/^replay: input saved to //p' "$log")
      new=$(printf '%s' "$files" | grep -c .)
      ok_line=$(grep -c '^mutate: .* no crash$' "$log")
      # -r saves its last input first, for a failure no handler sees: a
      # clean run does not need it.
      if [ $rc -eq 0 ] && [ "$ok_line" -gt 0 ]; then
        sed -n 's/^replay: the last input of -r, saved first to //p' "$log" | while read -r f; do rm -f "$f"; done
      fi
    fi
    if [ $rc -eq 0 ] && [ "$ok_line" -gt 0 ] && [ -n "$execs_n" ] && [ "${execs:-0}" -lt "$execs_n" ]; then
      result="error: ${execs:-0} of $execs_n execs in ${COUNT_CAP} s"
      failed=$((failed + 1))
      details+=("---- $arch/$t ($engine): stopped after ${execs:-0} of $execs_n executions (the $COUNT_CAP s cap)
     command: $(q "${cmd[@]}")")
    elif [ $rc -eq 0 ] && [ "$ok_line" -gt 0 ]; then
      result=ok
    elif [ -n "$files" ]; then
      result=CRASH
      failed=$((failed + 1))
      for f in $files; do
        again=""
        if [ $engine = mutate ]; then
          n=$(sed -n 's/.*(exec \([0-9]*\):.*/\1/p' "$log" | tail -n1)
          [ -n "$n" ] && again="
     the run again (if the file alone passes, an earlier input left state behind):
       $(q "${q[@]}" "$BUILD/qemu/$arch/replay/$t" -q -M 100000 -s "$seed" -r "$n" -t $HANG -o "$dir/crashes" "${seeds[@]}")"
          rep=("${q[@]}" "$BUILD/qemu/$arch/replay/$t" "$f")
        else
          rep=("${q[@]}" "$BUILD/qemu-fuzz/build-aarch64/bin/$t" "$f")
          rep=(env "ASAN_OPTIONS=$ASAN_OPTIONS" "${rep[@]}")
          [ -n "$execs_n" ] && again="
     the run again (the same inputs; on a threaded target, until thread timing changes which add coverage):
       rm -rf $(q "$lcorpus") && mkdir $(q "$lcorpus") && $(q env "ASAN_OPTIONS=$ASAN_OPTIONS" "${cmd[@]}")"
        fi
        details+=("---- $arch/$t ($engine): $(grep -m1 -E 'vigil oracle|vigil: |ERROR: |corrupt:|signal|hang|exit\(\)' "$log" | cut -c1-160)
     saved: $f
     reproduce: $(q "${rep[@]}")$again
     log: $log")
      done
    else
      result="error: exit $rc"
      [ $rc -eq 124 ] && result="error: timed out"
      failed=$((failed + 1))
      details+=("---- $arch/$t ($engine): $result, nothing saved
     command: $(q "${cmd[@]}")
$(tail -n 15 "$log" | sed 's/^/     | /')")
    fi
    row "$arch" "$t" "$engine" "$secs" "${execs:--}" "$new" "$result"
  done
done

echo
printf '%-8s %-8s %-9s %5s %9s %8s %7s  %s\n' arch target engine secs execs exec/s crashes result
printf '%s\n' "${rows[@]}"
if [ ${#details[@]} -gt 0 ]; then
  echo
  printf '%s\n' "${details[@]}"
fi
echo "qemu-fuzz: ${#rows[@]} runs ($*), $failed failed; work in $work/"
[ $failed -eq 0 ]
