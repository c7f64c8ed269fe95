#!/usr/bin/env bash
# The coverage of forked children reaches libFuzzer (diff/childcov.c).  The
# libFuzzer builds of corrupt and fork run their seeds once (-runs=0) and
# print which functions they covered.  Some functions run only in a child:
#   corrupt: scribble (fuzz/corrupt.c), which makes the corruption, and
#            vg_fatal (src/report.c), vigil's report when it catches it;
#   fork:    child (src/fork.c), vigil's fork handler in the child.
# They must be covered; and with VIGIL_CHILDCOV=0 (the children's counters
# stay their own, as before) they must not be, which shows that they are
# the children's.  The cov: figures with and without are printed.
set -euo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" fuzz-replay-build "$BUILD/fuzz/libfuzzer/corrupt" "$BUILD/fuzz/libfuzzer/fork" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# covered T SETTING: runs T's seeds with VIGIL_CHILDCOV=SETTING; the
# covered functions' names in $work/T.SETTING, the cov: figure in $cov.
covered() {
  local t=$1 v=$2 log=$work/$1.$2.log
  if ! VIGIL_CHILDCOV=$v "$BUILD/fuzz/libfuzzer/$t" -runs=0 -print_coverage=1 -detect_leaks=0 -timeout=60 \
    "$work/corpus-$t.$v" "$work/seeds-$t" >"$log" 2>&1; then
    bad "$t (VIGIL_CHILDCOV=$v): libFuzzer failed on the seeds; its log:"
    tail -n 20 "$log"
    return 1
  fi
  awk '$1 == "COVERED_FUNC:" { print $6 }' "$log" | sort -u >"$work/$t.$v"
  cov=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
}

for t in corrupt fork; do
  mkdir -p "$work/seeds-$t" "$work/corpus-$t.1" "$work/corpus-$t.0"
  "$BUILD/fuzz/replay/$t" -q -A "$work/seeds-$t" "corpus/$t" >/dev/null
  case $t in corrupt) probes="scribble vg_fatal" ;; fork) probes="child" ;; esac
  covered "$t" 1 || continue
  with=$cov
  covered "$t" 0 || continue
  echo "$t: cov $with with the children's coverage, $cov without; probes: $probes"
  for f in $probes; do
    grep -qxF "$f" "$work/$t.1" || bad "$t: $f, which only a child runs, is not covered"
    grep -qxF "$f" "$work/$t.0" && bad "$t: $f is covered with VIGIL_CHILDCOV=0 too: it is not a child's alone, or the setting does nothing"
  done
  [ "$with" -gt "$cov" ] || bad "$t: cov $with with the children's coverage is not above $cov without"
done
[ $fail = 0 ] && echo "childcov: the children's coverage reaches libFuzzer"
exit $fail
