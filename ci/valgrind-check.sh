#!/usr/bin/env bash
# `make valgrind-check`: vigil under memcheck, describing its blocks with
# client requests (src/annotate.h; the build is `make VALGRIND=1`, in
# build-valgrind/).
#  1. the unit tests (tests/unit_*.c; not tests/api_glibc.c, which compares
#     vigil with glibc's malloc in the same process: under Valgrind that is
#     memcheck's replacement, with its own semantics);
#  2. the replay of every corpus and regression through the oracle, once per
#     input (memcheck serialises threads anyway), except the corrupt target,
#     whose inputs overwrite freed blocks and vigil's metadata on purpose:
#     memcheck reports those writes, as it should; and the fork target,
#     whose oracle aborts a fork() that takes over 10 s, which the
#     fork-storm input's forks under memcheck do (a watchdog against
#     deadlocks, not a memcheck error);
#  3. helgrind and drd over unit_locks, unit_tcache, unit_modules and
#     unit_threads: no race report.  vigil tells them about its own
#     hand-offs (futex locks, remote-free stacks) with happens-before
#     requests, and tells drd to leave its atomic lock words and stack
#     heads alone.  unit_threads runs UNIT_THREADS_OPS=2000 operations per
#     thread and wave instead of 60000: at full length helgrind had not
#     finished after 17 minutes of CPU (about 40 s each like this);
#  4. tests/valgrind_demo.sh: memcheck reports a user program's heap overflow,
#     use-after-free, uninitialised read and leak with vigil as its malloc,
#     and helgrind and drd see no race in a cross-thread hand-off;
# Any memcheck error fails (--error-exitcode).  Flags, as README gives them:
#   valgrind --soname-synonyms=somalloc=nouserintercepts   keep vigil in place
#            --child-silent-after-fork=yes                  forked children quiet
#            --fair-sched=yes   threads that loop in malloc (the fork target's
#                               noise) otherwise starve the main thread: a
#                               4 s replay took over 5 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-valgrind}
ONLY=${1:-all} # all | memcheck | threads | demo
command -v valgrind >/dev/null || { echo "valgrind-check: valgrind missing: install the Debian package valgrind (bash ci/deps.sh valgrind)" >&2; exit 1; }
[ -f /usr/include/valgrind/memcheck.h ] || { echo "valgrind-check: /usr/include/valgrind/memcheck.h missing: install the Debian package valgrind" >&2; exit 1; }
out=$BUILD/valgrind-check
mkdir -p "$out"
env -u MAKEFLAGS make -s --no-print-directory VALGRIND=1 BUILD="$BUILD" tests fuzz-replay-build >"$out/build.log" 2>&1 ||
  { tail -20 "$out/build.log"; exit 1; }

MEMCHECK=(valgrind -q --error-exitcode=99 --soname-synonyms=somalloc=nouserintercepts
  --child-silent-after-fork=yes --fair-sched=yes)
fails=0
run() { # NAME LOG CMD...: pass, or print memcheck's first errors
  local name=$1 log=$2 t0=$SECONDS rc=0
  shift 2
  timeout 1800 "$@" >"$log" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    echo "ok   $name ($((SECONDS - t0)) s)"
  else
    fails=$((fails + 1))
    if [ $rc -eq 99 ]; then echo "FAIL $name: ${name%% *} errors:"; else echo "FAIL $name: exit $rc:"; fi
    grep -E '^==[0-9]+== ' "$log" | head -30 || tail -20 "$log"
  fi
}

if [ "$ONLY" = all ] || [ "$ONLY" = memcheck ]; then
  for t in "$BUILD"/tests/unit_*; do
    run "memcheck $(basename "$t")" "$out/$(basename "$t").log" "${MEMCHECK[@]}" "$t"
  done
  read -r -a targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
  for t in "${targets[@]}"; do
    case $t in corrupt | fork) continue ;; esac
    dirs=("corpus/$t")
    [ -d "corpus/regressions/$t" ] && dirs+=("corpus/regressions/$t")
    run "memcheck replay $t" "$out/replay-$t.log" "${MEMCHECK[@]}" "$BUILD/fuzz/replay/$t" -q -n 1 "${dirs[@]}"
  done
fi
if [ "$ONLY" = all ] || [ "$ONLY" = threads ]; then
  for tool in helgrind drd; do
    for t in unit_locks unit_tcache unit_modules unit_threads; do
      run "$tool $t" "$out/$tool-$t.log" env UNIT_THREADS_OPS=2000 valgrind --tool="$tool" -q --error-exitcode=99 \
        --soname-synonyms=somalloc=nouserintercepts --fair-sched=yes "$BUILD/tests/$t"
    done
  done
fi
if [ "$ONLY" = all ] || [ "$ONLY" = demo ]; then
  run "valgrind demonstration" "$out/demo.log" env VBUILD="$BUILD" bash tests/valgrind_demo.sh
  [ -f "$out/demo.log" ] && grep -E '^(ok|FAIL)' "$out/demo.log" | sed 's/^/     /'
fi
[ $fails -eq 0 ] || { echo "valgrind-check: $fails failed (logs in $out/)"; exit 1; }
echo "valgrind-check: all clean"
