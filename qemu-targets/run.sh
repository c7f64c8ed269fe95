#!/usr/bin/env bash
# The QEMU user-mode matrix: `make qemu-check [ARCHES="aarch64 ppc64le"]` runs
#   qemu-targets/run.sh [ARCH...]          (default: every target file)
# For each ARCH (a file qemu-targets/ARCH, format in README.md):
#   build   cross-build -static with the target's compiler, into
#           $BUILD/qemu/ARCH/ (the rules are in qemu-targets/qemu.mk)
# then, under qemu-ARCH -p N for each page size N of the target:
#   unit    tests/unit_core, tests/unit_modules and tests/unit_harden (the
#           hardening levels: canaries on big-endian and 32-bit targets)
#           (prefixed build)
#   seed    tests/seed_large_pages, which must report the page size it got
#   replay  corpus/<t> and corpus/regressions/<t> through each fuzz target's
#           replay driver (the oracle); threads and fork with -n 3
#   stress  tests/unit_threads (threads, remote frees, heap adoption)
# Prints one table row per (arch, page size), then, for each failure, the
# command that reproduces it and the tail of its log.  Exit status 0 only
# when every run passed (or failed exactly as the target's KNOWN_FAIL says).
#
# NATIVE=1 runs the same matrix on a real host of the arch (an arm64 or
# ppc64le runner): the same static builds (with the host's gcc when its
# triple is the target's), no QEMU, one page size: the host's own.  The
# default ARCHES is then the host's arch.  On x86_64, NATIVE=1 ARCHES=i686
# runs the 32-bit build natively.
set -u
cd "$(dirname "$0")/.." || exit 1
QT_WHO=qemu-check
. qemu-targets/lib.sh
TIMEOUT=${QEMU_TIMEOUT:-180}   # seconds per guest process
if [ $# -eq 0 ]; then
  if [ -z "$NATIVE" ]; then set -- $(qt_all)
  elif a=$(qt_host_arch); then set -- "$a"
  else
    echo "qemu-check: FAIL: NATIVE=1: no target file is this host's arch ($(uname -m)); give ARCHES= (on x86_64, i686 runs natively)"
    exit 1
  fi
fi
read -r -a fuzz_targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
[ ${#fuzz_targets[@]} -gt 0 ] || { echo "qemu-check: FAIL: no FUZZ_TARGETS in fuzz/fuzz.mk"; exit 1; }

# ---- every target's file and tools first: nothing runs if one is missing --
bad=0
for arch in "$@"; do
  qt_load "$arch" && qt_tools "$arch" || bad=1
done
[ $bad -eq 0 ] || exit 1

start=$(date +%s)
rows=() details=() notes=() failures=0

secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# report KIND ARCH PS WHAT LOG COMMAND...: one failure's block for the end.
report() {
  local kind=$1 arch=$2 ps=$3 what=$4 log=$5
  shift 5
  details+=("---- $arch, page size $ps, $kind: $what
     reproduce: $(printf '%q ' "$@")
     log: $log
$(tail -n 15 "$log" 2>/dev/null | sed 's/^/     | /')")
}

# guest LOG COMMAND...: runs COMMAND with a timeout, output to LOG; sets rc.
guest() {
  local log=$1
  shift
  timeout -k 5 "$TIMEOUT" "$@" >"$log" 2>&1
  rc=$?
}

# why RC LOG: a short reason for a failed guest run.
why() {
  local rc=$1 log=$2
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "timed out after $TIMEOUT s"
  elif [ "$rc" -eq 126 ]; then echo "cannot execute here ($(uname -m) host$([ -n "$NATIVE" ] && echo ", NATIVE=1"))"
  elif [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))"
  else echo "exit $rc, $(grep -cE '^[^ ]+:[0-9]+: CHECK\(' "$log") failed checks"; fi
}

# known ARCH-KNOWN_FAIL NAME PS LOG: true when NAME failed at PS exactly as a
# KNOWN_FAIL entry NAME@PS=FILE:LINE says: it ran to its verdict line, and
# every failed check is at FILE:LINE.
known() {
  local list=$1 name=$2 ps=$3 log=$4 e loc locs
  for e in $list; do
    [ "${e%%=*}" = "$name@$ps" ] || continue
    loc=${e#*=}
    grep -qE "^$name: [0-9]+ checks, [1-9][0-9]* failed\$" "$log" || return 1
    locs=$(grep -oE '^[^ ]+:[0-9]+: CHECK\(' "$log" | sed 's/: CHECK($//' | sort -u)
    [ "$locs" = "$loc" ]
    return
  done
  return 1
}
is_listed() {
  local e
  for e in $1; do [ "${e%%=*}" = "$2@$3" ] && return 0; done
  return 1
}

# testlib_run STAGE NAME: one testlib test; false when it failed (a KNOWN_FAIL
# match is true, and sets xfail=1).
testlib_run() {
  local stage=$1 name=$2 log=$logdir/$2.log
  local cmd=("${q[@]}" "$out/tests/$name")
  guest "$log" "${cmd[@]}"
  if [ $rc -eq 0 ] && grep -qE "^$name: [0-9]+ checks, 0 failed\$" "$log"; then
    if is_listed "$T_KNOWN_FAIL" "$name" "$ps"; then
      report "$stage" "$arch" "$ps" "$name passed, but KNOWN_FAIL in qemu-targets/$arch lists $name@$ps: remove that entry" "$log" "${cmd[@]}"
      return 1
    fi
    return 0
  fi
  if [ $rc -ne 0 ] && known "$T_KNOWN_FAIL" "$name" "$ps" "$log"; then
    notes+=("xfail: $arch, page size $ps: $name failed as KNOWN_FAIL says: $(grep -m1 -E '^[^ ]+:[0-9]+: CHECK\(' "$log")")
    xfail=1
    return 0
  fi
  local r
  if [ $rc -eq 0 ]; then r="exit 0 but no passing verdict line"; else r=$(why $rc "$log"); fi
  report "$stage" "$arch" "$ps" "$name: $r" "$log" "${cmd[@]}"
  return 1
}

# verdict OK: PASS, XFAIL or FAIL for a stage (run in $(...): the caller
# counts the failures).
verdict() {
  if [ "$1" -ne 0 ]; then echo FAIL
  elif [ "$xfail" -eq 1 ]; then echo XFAIL
  else echo PASS; fi
}

for arch in "$@"; do
  qt_load "$arch"
  # A native build has its own folder: its compiler may be the host's gcc.
  t0=$(date +%s.%N)
  qt_build "$arch"
  brc=$? out=$QT_OUT
  bsecs=$(secs_since "$t0")
  if [ $brc -ne 0 ]; then
    failures=$((failures + 1))
    report build "$arch" all "the cross build failed (exit $brc)" "$out/build.log" "${QT_BUILD_CMD[@]}"
    for ps in $T_PAGESIZES; do
      rows+=("$(printf '%-8s %-8s %-6s %-6s %-6s %-6s %-6s %s' "$arch" "$ps" FAIL - - - - "$bsecs")")
    done
    continue
  fi
  # Native: can this host execute the build at all?  (bash's exec says 126
  # for a binary of another arch, where timeout's execvp would hand it to sh.)
  if [ -n "$NATIVE" ] && { (exec "$out/replay/api" -h) >/dev/null 2>&1; [ $? -eq 126 ]; }; then
    failures=$((failures + 1))
    echo "$out/replay/api: cannot execute binary file on this $(uname -m) host" >"$out/native.log"
    report native "$arch" all "this $(uname -m) host cannot execute $arch binaries: run NATIVE=1 on a host of that arch" \
      "$out/native.log" "$out/replay/api" -h
    for ps in $T_PAGESIZES; do
      rows+=("$(printf '%-8s %-8s %-6s %-6s %-6s %-6s %-6s %s' "$arch" "$ps" PASS FAIL FAIL FAIL FAIL "$bsecs")")
    done
    continue
  fi
  # ---- the runs, page size by page size ------------------------------------
  for ps in $T_PAGESIZES; do
    t0=$(date +%s.%N)
    logdir=$out/logs/${NATIVE:+native-}p$ps
    qt_runner "$ps"
    q=("${QT_RUN[@]}")
    mkdir -p "$logdir"

    # unit
    xfail=0 ok=0
    testlib_run unit unit_core || ok=1
    testlib_run unit unit_modules || ok=1
    testlib_run unit unit_harden || ok=1
    v_unit=$(verdict $ok); [ "$v_unit" = FAIL ] && failures=$((failures + 1))

    # seed: must pass and must have run with the page size it was given
    xfail=0 ok=0
    testlib_run seed seed_large_pages || ok=1
    seen=$(sed -n 's/^page size: \([0-9]*\)$/\1/p' "$logdir/seed_large_pages.log" | head -n1)
    if [ $ok -eq 0 ] && [ "$seen" != "$ps" ]; then
      ok=1
      report seed "$arch" "$ps" "the guest saw page size ${seen:-none}, not $ps" \
        "$logdir/seed_large_pages.log" "${q[@]}" "$out/tests/seed_large_pages"
    fi
    v_seed=$(verdict $ok); [ "$v_seed" = FAIL ] && failures=$((failures + 1))

    # replay: every target's corpus and regressions, through the oracle
    xfail=0 ok=0
    for t in "${fuzz_targets[@]}"; do
      dirs=()
      for d in "corpus/$t" "corpus/regressions/$t"; do [ -d "$d" ] && dirs+=("$d"); done
      n=1
      case $t in threads|fork) n=3 ;; esac
      log=$logdir/replay-$t.log
      cmd=("${q[@]}" "$out/replay/$t" -q -n "$n" "${dirs[@]}")
      if [ ${#dirs[@]} -eq 0 ]; then
        echo "no corpus/$t nor corpus/regressions/$t" >"$log"
        report replay "$arch" "$ps" "$t: no corpus" "$log" "${cmd[@]}"
        ok=1
        continue
      fi
      guest "$log" "${cmd[@]}"
      count=$(sed -n 's/.*replayed \([0-9]*\).*/\1/p' "$log" | tail -n1)
      if [ $rc -ne 0 ]; then
        report replay "$arch" "$ps" "$t: $(why $rc "$log")" "$log" "${cmd[@]}"
        ok=1
      elif [ "${count:-0}" -eq 0 ]; then
        report replay "$arch" "$ps" "$t: replayed nothing" "$log" "${cmd[@]}"
        ok=1
      fi
    done
    v_replay=$(verdict $ok); [ "$v_replay" = FAIL ] && failures=$((failures + 1))

    # stress
    xfail=0 ok=0
    testlib_run stress unit_threads || ok=1
    v_stress=$(verdict $ok); [ "$v_stress" = FAIL ] && failures=$((failures + 1))

    rows+=("$(printf '%-8s %-8s %-6s %-6s %-6s %-6s %-6s %s' "$arch" "$ps" PASS \
               "$v_unit" "$v_seed" "$v_replay" "$v_stress" "$(secs_since "$t0") (+${bsecs} build)")")
  done
done

echo
printf '%-8s %-8s %-6s %-6s %-6s %-6s %-6s %s\n' arch pagesize build unit seed replay stress secs
printf '%s\n' "${rows[@]}"
[ ${#notes[@]} -gt 0 ] && printf '%s\n' "${notes[@]}"
if [ ${#details[@]} -gt 0 ]; then
  echo
  printf '%s\n' "${details[@]}"
fi
echo "qemu-check${NATIVE:+ (NATIVE=1, no QEMU)}: ${#rows[@]} rows ($*), $failures failed stages, $(( $(date +%s) - start )) s in all"
[ $failures -eq 0 ]
