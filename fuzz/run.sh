#!/usr/bin/env bash
# Runs fuzz targets under libFuzzer or AFL++ for a fixed time each, shows
# progress, saves every crash with a script that reproduces it, and ends with
# a summary table.  `make fuzz` and `make fuzz-smoke` call it after building.
#
#   fuzz/run.sh [-e libfuzzer|afl] [-s SECONDS] [-j JOBS] [-w WORKDIR]
#               [-t TIMEOUT] [TARGET...]
#
#   -e  engine (ENGINE, default libfuzzer); binaries in $BUILD/fuzz/<engine>/
#   -s  seconds per target (FUZZ_SECONDS, default 60)
#   -j  libFuzzer: targets run at once (JOBS, default 1).  AFL++: instances
#       per target, syncing through one -o folder: one -M (plain build), then
#       -S instances: CMPLOG (-c with the afl-cmplog build), the afl-asan
#       build, then plain ones with other power schedules; the targets run
#       one after another.  FUZZ_AFL_NAME=host prefixes the instance names,
#       FUZZ_AFL_SECONDARY=1 makes every instance an -S (a second machine).
#   -w  working folder (FUZZ_WORK, default ~/.cache/vigil-fuzz): per engine
#       and target, corpus/ (grows from run to run), crashes/ (with
#       <crash>.repro.sh), logs/
#   -t  seconds one input may take before it counts as a hang (FUZZ_TIMEOUT,
#       default 10)
#   TARGET...  default: FUZZ_TARGETS from fuzz/fuzz.mk
# Seeds come from corpus/<target>/ and corpus/regressions/<target>/ (text
# *.ops assembled by the replay driver) and are re-read on every run.
# FUZZ_RUNS=N (libFuzzer) also stops each run after N inputs, from seed 1.
# Exit: 0 when nothing crashed, 1 on any crash or error, 130 if interrupted.
# Ctrl-C (SIGINT) or SIGTERM stops the runs and prints the summary so far.

# SECONDS is bash's own clock: a value from the environment is only visible
# now, before any time has passed.
imported_seconds=$SECONDS
set -u -o pipefail

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
engine=${ENGINE:-libfuzzer}
secs=${FUZZ_SECONDS:-$imported_seconds}
[ "$secs" = 0 ] && secs=60
jobs=${JOBS:-1}
instances=1
work=${FUZZ_WORK:-$HOME/.cache/vigil-fuzz}
hang=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
every=${FUZZ_STATUS_EVERY:-5}

while getopts "e:s:j:w:t:h" o; do
  case $o in
    e) engine=$OPTARG ;; s) secs=$OPTARG ;; j) jobs=$OPTARG ;; w) work=$OPTARG ;; t) hang=$OPTARG ;;
    h) usage 0 ;; *) usage 2 >&2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  read -r -a targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
fi

die() { echo "fuzz/run.sh: $*" >&2; exit 2; }
case $engine in libfuzzer | afl) ;; *) die "unknown engine '$engine' (libfuzzer or afl)" ;; esac
for v in secs jobs hang rss_mb every; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number, not '${!v}'"
done
[ ${#targets[@]} -gt 0 ] || die "no targets"
for t in "${targets[@]}"; do
  [ -x "$B/fuzz/$engine/$t" ] || die "$B/fuzz/$engine/$t is not built (make fuzz-build-$engine)"
done
# AFL++: JOBS is the number of instances per target (one -M, the rest -S),
# and the targets run one after another.
if [ "$engine" = afl ] && [ "$jobs" -gt 1 ]; then
  instances=$jobs jobs=1
  for t in "${targets[@]}"; do
    for v in afl-cmplog afl-asan; do
      [ -x "$B/fuzz/$v/$t" ] || die "$B/fuzz/$v/$t is not built (make fuzz-build-$v; make fuzz builds it for JOBS > 1)"
    done
  done
fi
mkdir -p "$work" && work=$(cd "$work" && pwd) || die "cannot create $work"
case $work/ in "$B"/*) ;; "$ROOT"/*) echo "fuzz/run.sh: note: $work is inside the source tree" >&2 ;; esac

# ---- the engines ------------------------------------------------------------
# The per-target sanitizer options (LeakSanitizer, ASan's quarantine), with
# their reasons: fuzz/sanitizer_options.sh, shared with qemu-targets/fuzz.sh
# and the OSS-Fuzz .options.
. "$ROOT/fuzz/sanitizer_options.sh"

# -malloc_limit_mb: libFuzzer otherwise reports any single malloc over
# rss_limit_mb (2 GB) as an OOM, even one that succeeds without touching its
# memory; the RSS limit still catches real growth.  -close_fd_mask=1: the
# targets' stdout is noise; their stderr (the oracle's divergence message)
# stays in the log.
lf_env() {
  echo "ASAN_OPTIONS=$(fuzz_asan_options "$1" "$(fuzz_leaks "$1")")${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  echo "UBSAN_OPTIONS=print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
}
lf_flags() {
  echo "-timeout=$hang -rss_limit_mb=$rss_mb -malloc_limit_mb=1048576 -detect_leaks=$(fuzz_leaks "$1")"
}

# Every input file under the seed folders, as binary, into $W/seeds.
make_seeds() {
  local t=$1 W=$2 dirs=() d f
  rm -rf "$W/seeds" && mkdir -p "$W/seeds"
  for d in corpus/"$t" corpus/regressions/"$t"; do [ -d "$d" ] && dirs+=("$d"); done
  [ ${#dirs[@]} -gt 0 ] || return 0
  if [ -x "$B/fuzz/replay/$t" ]; then
    "$B/fuzz/replay/$t" -q -A "$W/seeds" "${dirs[@]}" >/dev/null || return 1
    return 0
  fi
  # No replay driver: vigil-ops for the text form, else binaries only.
  while IFS= read -r -d '' f; do
    case ${f##*/} in NOTES | README* | *.md | *.repro.sh | .*) continue ;; esac
    local out=$W/seeds/$(tr / _ <<<"${f%.ops}")
    if [[ $f != *.ops ]]; then cp "$f" "$out"
    elif [ -x "$B/vigil-ops" ]; then "$B/vigil-ops" asm -o "$out" "$f" || return 1
    else echo "fuzz/run.sh: $t: skipping $f (no replay driver or vigil-ops to assemble it)" >&2; fi
  done < <(find "${dirs[@]}" -type f -print0 | sort -z)
}

start_libfuzzer() {
  local t=$1 W=$2 log=$3
  local -a env flags
  mapfile -t env < <(lf_env "$t")
  read -r -a flags <<<"$(lf_flags "$t")"
  # FUZZ_RUNS=N: at most N inputs from seed 1, so that a run from the same
  # seeds and corpus does the same work (the pre-commit hook's test).
  [ -n "${FUZZ_RUNS:-}" ] && flags+=(-runs="$FUZZ_RUNS" -seed=1)
  exec $own_session env "${env[@]}" "$B/fuzz/libfuzzer/$t" -max_total_time="$secs" "${flags[@]}" \
    -artifact_prefix="$W/crashes/" -print_final_stats=1 -close_fd_mask=1 \
    "$W/corpus" "$W/seeds" >"$log" 2>&1
}

start_afl() {
  local t=$1 W=$2 log=$3 f
  # AFL's input = the seeds plus everything earlier runs found.  A second
  # machine (FUZZ_AFL_SECONDARY=1) sharing the folder clears only its own
  # instances' output.
  if [ "${FUZZ_AFL_SECONDARY:-0}" = 1 ] && [ "$instances" -gt 1 ]; then
    rm -rf "$W/$afl_in" "$W/.pids" "$W/afl-out/${FUZZ_AFL_NAME:+${FUZZ_AFL_NAME}-}"{main,cmplog,asan,plain*}
  else
    rm -rf "$W/$afl_in" "$W/afl-out" "$W/.pids"
  fi
  mkdir -p "$W/$afl_in"
  find "$W/seeds" "$W/corpus" -maxdepth 1 -type f -size -1024k -exec cp -t "$W/$afl_in" {} + 2>/dev/null
  if [ -z "$(ls -A "$W/$afl_in")" ]; then printf '\0\0\0\0\0\0\0\0' >"$W/$afl_in/zeros"; fi
  # AFL_FAST_CAL: 3 calibration runs per input instead of 8; the slow
  # targets (threads, fork, options) otherwise spend half a short run
  # calibrating a grown corpus.  (-V counts fuzzing time only.)
  local -a env=(AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_FAST_CAL=1)
  [ "$afl_no_affinity" = 1 ] && env+=(AFL_NO_AFFINITY=1)
  local -a run=(afl-fuzz -i "$W/$afl_in" -o "$W/afl-out" -V "$secs" -t "$((hang * 1000))")
  local statsd=()
  [ -n "${STATSD_PORT_OF[$t]:-}" ] && statsd=(AFL_STATSD=1 AFL_STATSD_HOST=127.0.0.1 AFL_STATSD_PORT="${STATSD_PORT_OF[$t]}")
  # afl-fuzz refuses sanitizer options it did not set itself; the plain and
  # CMPLOG builds have no sanitizer.
  local -a nosan=(-u ASAN_OPTIONS -u UBSAN_OPTIONS -u MSAN_OPTIONS -u LSAN_OPTIONS)
  if [ "$instances" -le 1 ]; then
    exec $own_session env "${nosan[@]}" "${env[@]}" "${statsd[@]}" "${run[@]}" -- "$B/fuzz/afl/$t" >"$log" 2>&1
  fi
  # Several instances in one -o folder, which they sync through: instance 0
  # is the main (-M, deterministic stages), 1 CMPLOG, 2 the ASan build
  # (afl-fuzz wants abort_on_error=1 and symbolize=0 then), 3 and up plain
  # with other power schedules.  Each writes its own log beside the main's.
  # FUZZ_AFL_NAME prefixes the names and FUZZ_AFL_SECONDARY=1 makes
  # instance 0 an -S too, for a second machine syncing into the same
  # folder (README: "Fuzzing with AFL++ on several cores or machines").
  local i name role bin pids=() schedules=(explore coe lin quad exploit rare)
  local prefix=${FUZZ_AFL_NAME:+${FUZZ_AFL_NAME}-}
  for ((i = 0; i < instances; i++)); do
    local -a extra=() venv=("${nosan[@]}")
    bin=$B/fuzz/afl/$t role=-S
    case $i in
      0) name=main; [ "${FUZZ_AFL_SECONDARY:-0}" = 1 ] || role=-M; venv+=("${statsd[@]}") ;;
      1) name=cmplog; extra=(-c "$B/fuzz/afl-cmplog/$t") ;;
      2) name=asan; bin=$B/fuzz/afl-asan/$t
         venv=(ASAN_OPTIONS="abort_on_error=1:symbolize=0:$(fuzz_asan_options "$t" "$(fuzz_leaks "$t")")") ;;
      *) name=plain$i; extra=(-p "${schedules[$(( (i - 3) % ${#schedules[@]} ))]}") ;;
    esac
    local out=$log
    [ "$i" -gt 0 ] && out=${log%.log}.$name.log
    ( exec $own_session env "${venv[@]}" "${env[@]}" "${run[@]}" "$role" "$prefix$name" "${extra[@]}" -- "$bin" ) >"$out" 2>&1 &
    pids+=($!)
  done
  echo "${pids[*]}" >"$W/.pids"
  # The signals go to the instances themselves (on_signal reads .pids):
  # this runner, a background shell, ignores SIGINT.
  local rc=0 r
  for p in "${pids[@]}"; do
    wait "$p"; r=$?
    [ $r -gt $rc ] && rc=$r
  done
  return $rc
}

# AFL's input folder, per machine when several share the work folder.
afl_in=afl-in${FUZZ_AFL_NAME:+-$FUZZ_AFL_NAME}

# Each fuzzer runs in a session of its own, so a Ctrl-C at the terminal
# reaches only make and this script, which then stops each fuzzer by its
# pid.  Were the SIGINT sent to the whole process group, it would also hit
# the children that the fork and corrupt targets are waiting for, and their
# parent would report the dead child as a crash.
own_session=$(command -v setsid || true)

# More afl-fuzz instances than cores cannot each have a core of their own.
afl_no_affinity=0
if [ "$engine" = afl ]; then
  others=$(pgrep -c -x afl-fuzz || true)
  [ $((jobs * instances + ${others:-0})) -gt "$(nproc)" ] && afl_no_affinity=1
fi

# ---- progress and results ---------------------------------------------------
# Engine numbers as "execs eps cov corpus" ("-" when not known yet).
# libFuzzer: its last status line (it prints one per new input and at each
# power of two of execs).  AFL++ 4.04c writes plot_data only after the first
# minute and fuzzer_stats once a minute and at exit, but sends its StatsD
# metrics every second: a small UDP listener keeps the latest in .statsd.
lf_numbers() {
  grep -a -E '^#[0-9]+' "$1" 2>/dev/null | tail -n 1 | awk '{
    e = substr($1, 2); c = "-"; k = "-"; s = "-"
    for (i = 2; i < NF; i++) {
      if ($i == "cov:") c = $(i + 1)
      if ($i == "corp:") { k = $(i + 1); sub(/\/.*/, "", k) }
      if ($i == "exec/s:") s = $(i + 1)
    }
    print e, s, c, k }'
}
afl_numbers() {
  local inst=default
  [ "$instances" -gt 1 ] && inst=${FUZZ_AFL_NAME:+${FUZZ_AFL_NAME}-}main
  local stats=$1/$inst/fuzzer_stats plot=$1/$inst/plot_data log=${3:-}
  if [ -f "$stats" ] && [ "${2:-}" = final ]; then
    # Several instances: their execs and rates add up; coverage and corpus
    # are the main's, which imports what the others find.
    awk -F' *: *' -v main="$stats" '{ if (FILENAME == main) v[$1] = $2
        if ($1 == "execs_done") e += $2; if ($1 == "execs_per_sec") r += $2 } END {
      printf "%s %.0f %s %s\n", e, r, v["edges_found"], v["corpus_count"] }' "$1"/*/fuzzer_stats
    return
  fi
  if [ -s "$1/../.statsd" ]; then
    awk '{ v[$1] = $2 } END {
      printf "%s %.0f %s %s\n", v["execs_done"], v["execs_per_sec"], v["edges_found"], v["corpus_count"] }' "$1/../.statsd"
  elif [ -f "$plot" ] && [ "$(grep -vc '^#' "$plot")" -gt 0 ]; then
    awk -F', *' '/^#/ { sub(/^# */, ""); for (i = 1; i <= NF; i++) col[$i] = i; next }
      { last = $0 } END { split(last, f, /, */)
        printf "%s %.0f %s %s\n", f[col["total_execs"]], f[col["execs_per_sec"]], f[col["edges_found"]], f[col["corpus_count"]] }' "$plot"
  elif [ -n "$log" ]; then
    grep -a 'Fuzzing test case #' "$log" 2>/dev/null | tail -n 1 | sed -n 's/.*(\([0-9]*\) total.*/- - - \1/p'
  fi
}

# The StatsD listener: prints its port, then keeps FILE at the latest value
# of every metric ("execs_done 1234" lines).
statsd_listener() {
  exec python3 -c '
import os, socket, sys
out = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
vals = {}
while True:
    for line in s.recv(65536).decode("ascii", "replace").splitlines():
        name, _, rest = line.partition(":")
        vals[name.rsplit(".", 1)[-1]] = rest.split("|")[0]
    with open(out + ".tmp", "w") as f:
        f.write("".join("%s %s\n" % kv for kv in vals.items()))
    os.replace(out + ".tmp", out)
' "$1"
}

# Crash files are the engine's artifacts; AFL's are copied in under
# content names (crash-<sha1>, timeout-<sha1>) so both engines look alike.
collect_afl() {
  local t=$1 W=$2 f sum kind
  : >"$W/.run-crashes"
  for f in "$W"/afl-out/*/queue/id:*; do
    [ -f "$f" ] || continue
    sum=$(sha1sum <"$f") && cp -n "$f" "$W/corpus/${sum%% *}"
  done
  # keep KIND FILE NAME: FILE as crashes/KIND-<sha1> (once), counted in this
  # run, with AFL's NAME for it beside.
  keep() {
    sum=$(sha1sum <"$2")
    echo "$1-${sum%% *}" >>"$W/.run-crashes"
    [ -e "$W/crashes/$1-${sum%% *}" ] && return
    cp "$2" "$W/crashes/$1-${sum%% *}"
    echo "$3" >"$W/crashes/.afl-name-${sum%% *}"
  }
  # Seeds that crash or hang are skipped by AFL with a warning, not saved:
  # a regression that fails again must still count.
  local name
  while IFS=: read -r kind name; do
    f=$W/$afl_in/${name#*orig:}
    [ -f "$f" ] && keep "$kind" "$f" "seed ${name#*orig:}"
  done < <(sed -n "s/.*Test case '\([^']*\)' results in a crash.*/crash:\1/p; s/.*Test case '\([^']*\)' results in a timeout.*/timeout:\1/p" "${LOG_OF[$t]}")
  local d
  for kind in crashes:crash hangs:timeout; do
    for d in "$W"/afl-out/*; do
      for f in "$d/${kind%%:*}"/id:*; do
        [ -f "$f" ] && keep "${kind#*:}" "$f" "${d##*/}/${f##*/}"
      done
    done
  done
}
# (libFuzzer's slow-unit-* files are not failures.)
crash_files() {
  find "$1/crashes" -maxdepth 1 -type f ! -name '*.repro.sh' ! -name '.*' ! -name 'slow-unit-*' -printf '%f\n' 2>/dev/null | sort
}

write_repro() {
  local t=$1 W=$2 c=$3 found=$4 afl_name=""
  [ -f "$W/crashes/.afl-name-${c#*-}" ] && afl_name=" (AFL: $(cat "$W/crashes/.afl-name-${c#*-}"))"
  local script=$W/crashes/$c.repro.sh
  {
    echo "#!/bin/sh"
    echo "# vigil fuzz finding: target $t, engine $engine, $found$afl_name"
    echo "# vigil at $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown), tree $ROOT"
    echo "#   sh $c.repro.sh [replay] [-n N]   the replay driver, no sanitizer: the oracle names the op"
    echo "#   sh $c.repro.sh ops               the input as ops (vigil-ops print)"
    echo "#   sh $c.repro.sh asan              the libFuzzer build (ASan + UBSan) on this one input"
    echo "crash='$W/crashes/$c'"
    echo "cd '$ROOT' || exit 2"
    echo "# (Re)builds the tool first, so that after a fix it shows whether the fix works."
    echo "build() {"
    echo "  make -s --no-print-directory BUILD='$BUILD' \"\$1\" >&2 && return"
    echo "  [ -x \"\$1\" ] || exit 2"
    echo "  echo \"(make failed: using the existing \$1)\" >&2"
    echo "}"
    echo "case \${1:-replay} in -*) mode=replay ;; *) mode=\${1:-replay}; [ \$# -gt 0 ] && shift ;; esac"
    echo "case \$mode in"
    echo "  replay) build '$BUILD/fuzz/replay/$t'"
    echo "          exec '$BUILD/fuzz/replay/$t' \"\$@\" \"\$crash\" ;;"
    echo "  ops)    build '$BUILD/vigil-ops'"
    echo "          exec '$BUILD/vigil-ops' print --target $t \"\$crash\" ;;"
    echo "  asan)   build '$BUILD/fuzz/libfuzzer/$t'"
    echo "          exec env $(lf_env "$t" | sed "s/.*/'&'/" | tr '\n' ' ')'$BUILD/fuzz/libfuzzer/$t' $(lf_flags "$t") \"\$crash\" ;;"
    echo "  *) echo \"usage: sh \$0 [replay [-n N]|ops|asan]\" >&2; exit 2 ;;"
    echo "esac"
  } >"$script"
  chmod +x "$script"
}

# Runs the fresh crash through the replay driver once: proof that the saved
# file and its script reproduce it, and the oracle's message, for the table.
check_repro() {
  local t=$1 W=$2 c=$3 out rc
  case $c in
    leak-*) echo "a leak: LeakSanitizer only, see repro.sh asan"; return ;;
    oom-*) echo "over the RSS limit: libFuzzer build only, see repro.sh asan"; return ;;
  esac
  out=$W/logs/$c.replay.txt
  timeout --foreground -k 5 $((hang * 3)) "$B/fuzz/replay/$t" "$W/crashes/$c" >"$out" 2>&1
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "hangs under replay too"
  elif [ $rc -gt 128 ]; then echo "replay dies of signal $((rc - 128))"
  elif [ $rc -ne 0 ]; then echo "replay exits $rc"
  else echo "does not reproduce under replay (try: repro.sh asan; or state from earlier inputs)"; fi
}

# ---- scheduling -------------------------------------------------------------
declare -A CRASHES_OF SUB_OF W_OF PID_OF START_OF END_OF BEFORE_OF LOG_OF RESULT NUMS STATSD_PID_OF STATSD_PORT_OF
crashes_all=() failed=0 tick=0 stop=0 stop_at=0 pending=("${targets[@]}") running=()
stamp=$(date +%Y%m%d-%H%M%S)

launch() {
  local t=$1 W=$work/$engine/$1
  mkdir -p "$W/corpus" "$W/crashes" "$W/logs"
  W_OF[$t]=$W
  if ! make_seeds "$t" "$W"; then
    RESULT[$t]="error: seeds do not assemble"; NUMS[$t]="- - - -"; START_OF[$t]=$(date +%s); END_OF[$t]=${START_OF[$t]}
    failed=1; return
  fi
  BEFORE_OF[$t]=$(crash_files "$W")
  LOG_OF[$t]=$W/logs/$stamp.log
  ln -sfn "$stamp.log" "$W/logs/last.log"
  rm -f "$W/.rc" "$W/.statsd" "$W/.statsd.port" "$W/.run-crashes"
  if [ "$engine" = afl ] && command -v python3 >/dev/null; then
    statsd_listener "$W/.statsd" >"$W/.statsd.port" 2>/dev/null &
    STATSD_PID_OF[$t]=$!
    for _ in $(seq 50); do [ -s "$W/.statsd.port" ] && break; sleep 0.1; done
    STATSD_PORT_OF[$t]=$(cat "$W/.statsd.port")
  fi
  # The subshell records the exit status; start_* ends in exec, so $! is
  # the fuzzer itself, for signals.
  ( "start_$engine" "$t" "$W" "${LOG_OF[$t]}" & echo $! >"$W/.pid"; wait $!; echo $? >"$W/.rc" ) &
  SUB_OF[$t]=$!
  START_OF[$t]=$(date +%s)
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$W/.pid" ] && break; sleep 0.1; done
  PID_OF[$t]=$(cat "$W/.pid" 2>/dev/null)
  rm -f "$W/.pid"
  running+=("$t")
  echo "[$t] $engine for ${secs}s: seeds $(ls "$W/seeds" | wc -l), corpus $(ls "$W/corpus" | wc -l), log ${LOG_OF[$t]}"
}

# This run's findings: the files that appeared, plus those the engine
# reported again (a known crash found again keeps its content name).
new_crashes() { comm -13 <(echo "${BEFORE_OF[$1]}") <(crash_files "${W_OF[$1]}"); }
run_crashes() {
  local t=$1 W=${W_OF[$1]}
  {
    new_crashes "$t"
    if [ "$engine" = libfuzzer ]; then
      sed -n 's|.*Test unit written to .*/\([^/]*\)$|\1|p' "${LOG_OF[$t]}" 2>/dev/null | grep -v '^slow-unit-'
    else
      cat "$W/.run-crashes" 2>/dev/null
    fi
  } | grep . | sort -u
}

status() {
  local t=$1 W=${W_OF[$1]} n execs eps cov corp ncrash
  if [ "$engine" = libfuzzer ]; then n=$(lf_numbers "${LOG_OF[$t]}"); ncrash=$(run_crashes "$t" | grep -c .)
  else n=$(afl_numbers "$W/afl-out" live "${LOG_OF[$t]}"); ncrash=$(find "$W"/afl-out/*/crashes "$W"/afl-out/*/hangs -name 'id:*' 2>/dev/null | wc -l); fi
  read -r execs eps cov corp <<<"${n:-- - - -}"
  # AFL's own rate is smoothed and wild in its first seconds: show the
  # average since the start instead.
  if [ "$engine" = afl ] && [[ $execs =~ ^[0-9]+$ ]]; then
    eps=$((execs / ($(date +%s) - START_OF[$t] > 0 ? $(date +%s) - START_OF[$t] : 1)))
  fi
  if [ -z "$n" ]; then
    printf '[%s] %3ds/%ds  starting (%s the corpus)\n' "$t" $(($(date +%s) - START_OF[$t])) "$secs" \
      "$([ "$engine" = afl ] && echo calibrating || echo loading)"
  else
    printf '[%s] %3ds/%ds  execs %s  %s/s  cov %s  corpus %s  crashes %s\n' "$t" \
      $(($(date +%s) - START_OF[$t])) "$secs" "$execs" "$eps" "$cov" "$corp" "$ncrash"
  fi
}

finish() {
  local t=$1 W=${W_OF[$1]} rc n c found
  wait "${SUB_OF[$t]}" 2>/dev/null
  rc=$(cat "$W/.rc" 2>/dev/null || echo 255)
  END_OF[$t]=$(stat -c %Y "$W/.rc" 2>/dev/null || date +%s)
  if [ -n "${STATSD_PID_OF[$t]:-}" ]; then
    kill "${STATSD_PID_OF[$t]}" 2>/dev/null; wait "${STATSD_PID_OF[$t]}" 2>/dev/null
  fi
  if [ "$engine" = libfuzzer ]; then
    n=$(lf_numbers "${LOG_OF[$t]}")
    local ex sp
    ex=$(sed -n 's/^stat::number_of_executed_units: *//p' "${LOG_OF[$t]}" | tail -n 1)
    sp=$(sed -n 's/^stat::average_exec_per_sec: *//p' "${LOG_OF[$t]}" | tail -n 1)
    local e s cv cp
    read -r e s cv cp <<<"${n:-- - - -}"
    # libFuzzer's average is 0 for a run shorter than a second.
    [ "${sp:-0}" = 0 ] && [[ ${ex:-$e} =~ ^[0-9]+$ ]] && sp=$(( ${ex:-$e} / ((END_OF[$t] - START_OF[$t]) > 0 ? END_OF[$t] - START_OF[$t] : 1) ))
    NUMS[$t]="${ex:-$e} ${sp:-$s} $cv $cp"
  else
    collect_afl "$t" "$W"
    n=$(afl_numbers "$W/afl-out" final)
    NUMS[$t]=${n:-- - - -}
  fi
  local fresh nnew
  fresh=$(run_crashes "$t")
  nnew=$(new_crashes "$t" | grep -c .)
  CRASHES_OF[$t]=$(grep -c . <<<"$fresh")
  found="found $(date -u +%FT%TZ)"
  local k=0
  for c in $fresh; do
    write_repro "$t" "$W" "$c" "$found"
    # The first few are replayed and listed; AFL can save hundreds.
    if [ $k -lt 5 ]; then crashes_all+=("$t: $W/crashes/$c ($(check_repro "$t" "$W" "$c"))"); fi
    k=$((k + 1))
  done
  [ $k -gt 5 ] && crashes_all+=("$t: ... and $((k - 5)) more in $W/crashes/")
  if [ -n "$fresh" ]; then
    RESULT[$t]="CRASH"; failed=1
    echo "[$t] CRASH: ${CRASHES_OF[$t]} ($nnew new), saved in $W/crashes/ with .repro.sh; from the log:"
    show_failure "$t" | sed 's/^/    | /'
  elif [ "$engine" = afl ] && grep -aq 'PROGRAM ABORT' "${LOG_OF[$t]}"; then
    RESULT[$t]="error: afl-fuzz stopped"; failed=1
    grep -a -A3 'PROGRAM ABORT' "${LOG_OF[$t]}" | sed 's/\x1b\[[0-9;]*m//g; s/^/    | /'
  elif [ "$stop" = 1 ] || grep -aq -E 'libFuzzer: run interrupted|Testing aborted by user' "${LOG_OF[$t]}"; then
    # (A fuzzer that was interrupted on its own means the user wants to stop.)
    RESULT[$t]="interrupted"; [ "$stop" = 1 ] || on_signal
  elif [ "$rc" != 0 ]; then
    RESULT[$t]="error: exit $rc"; failed=1
    tail -n 15 "${LOG_OF[$t]}" | sed 's/^/    | /'
  else RESULT[$t]="ok"; fi
  echo "[$t] done: ${RESULT[$t]}"
}

# The lines around the first report in the log (libFuzzer prints the
# target's stderr, the oracle's message included, just before its own).
show_failure() {
  local log=${LOG_OF[$1]} at
  if [ "$engine" = afl ]; then
    echo "(AFL keeps no target output: the replay check above has it; logs in ${W_OF[$1]}/logs/)"
    local f; f=$(ls -t "${W_OF[$1]}"/logs/*.replay.txt 2>/dev/null | head -n 1)
    [ -n "$f" ] && tail -n 12 "$f"
    return
  fi
  at=$(grep -a -n -m 1 -E '==[0-9]+== *(ERROR|ALARM|WARNING: MemorySanitizer)|runtime error:|^ALARM|out-of-memory' "$log" | cut -d: -f1)
  [ -n "$at" ] || at=$(wc -l <"$log")
  sed -n "$((at > 10 ? at - 10 : 1)),$((at + 12))p" "$log"
}

# First signal: ask every running fuzzer to stop (both engines then write
# their stats and exit); a second one kills them.
on_signal() {
  local t sig=INT
  if [ "$stop" = 1 ]; then sig=KILL; else
    stop=1 stop_at=$(date +%s)
    echo; echo "fuzz/run.sh: stopping (the summary follows; again to kill)"
  fi
  for t in "${running[@]}"; do
    # (Several AFL++ instances: each gets the signal itself.)
    [ -n "${PID_OF[$t]:-}" ] && kill -$sig "${PID_OF[$t]}" $(cat "${W_OF[$t]}/.pids" 2>/dev/null) 2>/dev/null
  done
}
trap on_signal INT TERM

if [ "$instances" -gt 1 ]; then
  names=$(printf '%s\n' main cmplog asan $(seq 3 $((instances - 1)) | sed 's/^/plain/') | head -n "$instances" | paste -sd, | sed 's/,/, /g')
  echo "fuzz: engine $engine, ${secs}s per target, $instances instances each ($names), work $work"
else
  echo "fuzz: engine $engine, ${secs}s per target, ${jobs} at once, work $work"
fi
while :; do
  while [ "$stop" = 0 ] && [ ${#pending[@]} -gt 0 ] && [ ${#running[@]} -lt "$jobs" ]; do
    launch "${pending[0]}"
    pending=("${pending[@]:1}")
  done
  [ ${#running[@]} -eq 0 ] && break
  # Look every second (a finished fuzzer frees its slot at once); print
  # the status every $every seconds.
  sleep 1 & wait $! 2>/dev/null
  tick=$((tick + 1)) show=0
  [ $((tick % every)) -eq 0 ] && show=1
  still=()
  for t in "${running[@]}"; do
    if [ -f "${W_OF[$t]}/.rc" ]; then finish "$t"; continue; fi
    still+=("$t")
    # A fuzzer well past its time (start-up and a last slow input allowed
    # for), or still there 30 s after Ctrl-C, is stopped, then killed.
    now=$(date +%s) limit=$((START_OF[$t] + secs + 3 * hang + 60))
    [ "$stop" = 1 ] && [ $((stop_at + 30)) -lt $limit ] && limit=$((stop_at + 30))
    if [ "$now" -gt $((limit + 30)) ]; then
      kill -KILL "${PID_OF[$t]}" $(cat "${W_OF[$t]}/.pids" 2>/dev/null) 2>/dev/null
    elif [ "$now" -gt $limit ]; then kill -INT "${PID_OF[$t]}" $(cat "${W_OF[$t]}/.pids" 2>/dev/null) 2>/dev/null; fi
    [ "$stop" = 0 ] && [ $show = 1 ] && status "$t"
  done
  running=("${still[@]+"${still[@]}"}")
done

# ---- summary ----------------------------------------------------------------
echo
echo "fuzz summary ($engine, ${secs}s per target; coverage: $([ "$engine" = afl ] && echo 'AFL edges found' || echo 'libFuzzer cov'))"
printf '%-8s %-9s %7s %11s %8s %8s %7s %7s  %s\n' target engine seconds execs execs/s coverage corpus crashes result
for t in "${targets[@]}"; do
  if [ -z "${RESULT[$t]:-}" ]; then
    printf '%-8s %-9s %7s %11s %8s %8s %7s %7s  %s\n' "$t" "$engine" - - - - - - "not run"
    continue
  fi
  read -r execs eps cov corp <<<"${NUMS[$t]}"
  n=${CRASHES_OF[$t]:-0}
  printf '%-8s %-9s %7s %11s %8s %8s %7s %7s  %s\n' "$t" "$engine" $((END_OF[$t] - START_OF[$t])) \
    "${execs:--}" "${eps:--}" "${cov:--}" "${corp:--}" "$n" "${RESULT[$t]}"
done
if [ ${#crashes_all[@]} -gt 0 ]; then
  echo
  echo "crashes (reproduce: sh <crash>.repro.sh; see fuzz/README.md):"
  printf '  %s\n' "${crashes_all[@]}"
fi
echo "working corpus and logs: $work/$engine/<target>/"
[ "$failed" = 1 ] && exit 1
[ "$stop" = 1 ] && exit 130
exit 0
