#!/usr/bin/env bash
# Issue 9: `make coverage` (ci/coverage.sh) writes its HTML report and its
# summary, every file of src/ with code in this build is in it, and the
# line coverage of src/ stays at or above 90% (README gives the figures and
# what stays uncovered).
set -u -o pipefail
BUILD=${BUILD:-build}
out=$BUILD/cov
COV_BUILD=$out bash ci/coverage.sh >"$BUILD/coverage.log" 2>&1 || { echo "FAIL: ci/coverage.sh:"; tail -20 "$BUILD/coverage.log"; exit 1; }
[ -s "$out/coverage/index.html" ] || { echo "FAIL: no $out/coverage/index.html"; exit 1; }
sum=$out/coverage/summary.txt
# A file may be missing only if this build compiles no code from it (as
# src/history.c, which is for the ASan build alone): its object defines no
# function.
for f in src/*.c; do
  grep -q "$(basename "$f") " "$sum" && continue
  o=$out/obj/std/$(basename "$f" .c).o
  [ -f "$o" ] || { echo "FAIL: $f is not in $sum, and there is no $o"; exit 1; }
  if nm --defined-only "$o" | grep -q ' [Tt] '; then
    echo "FAIL: $f is not in $sum, though $o has code:"; nm --defined-only "$o" | grep ' [Tt] ' | head -5; exit 1
  fi
  echo "coverage_report: $f compiles to no code in this build: not counted"
done
total=$(awk '$1 == "TOTAL" { print $10 }' "$sum")
[ -n "$total" ] || { echo "FAIL: no TOTAL line in $sum"; cat "$sum"; exit 1; }
echo "coverage of src/: lines $total, branches $(awk '$1 == "TOTAL" { print $13 }' "$sum")"
awk -v t="${total%\%}" 'BEGIN { exit !(t >= 90) }' || { echo "FAIL: line coverage $total is below 90%"; exit 1; }
echo "coverage_report: report in $out/coverage/index.html"
