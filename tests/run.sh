#!/usr/bin/env bash
# Runs every test binary and script; prints one line per test and the total.
# Usage: tests/run.sh [regex]      (BUILD=build by default)
set -u
BUILD=${BUILD:-build}
export BUILD
filter=${1:-.}
pass=0 fail=0 skip=0 failed=()
logdir=$BUILD/test-logs
mkdir -p "$logdir"
tests=()
for t in "$BUILD"/tests/unit_* "$BUILD"/tests/api_* "$BUILD"/tests/seed_* tests/*.sh; do
  [ -e "$t" ] || continue
  case "$t" in *.log|*.d) continue ;; esac
  [ "$(basename "$t")" = run.sh ] && continue
  # A binary whose source was removed is stale, not a test.
  [[ "$t" == *.sh ]] || [ -f "tests/$(basename "$t").c" ] || continue
  [[ "$t" =~ $filter ]] || continue
  tests+=("$t")
done
for t in "${tests[@]}"; do
  name=$(basename "$t")
  log=$logdir/$name.log
  start=$(date +%s.%N)
  if [[ "$t" == *.sh ]]; then timeout 900 bash "$t" >"$log" 2>&1; rc=$?
  else timeout 900 "$t" >"$log" 2>&1; rc=$?; fi
  secs=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo 0)")
  if [ $rc -eq 0 ]; then pass=$((pass+1)); printf 'PASS  %-34s %6ss\n' "$name" "$secs"
  elif [ $rc -eq 77 ]; then skip=$((skip+1)); printf 'SKIP  %-34s %s\n' "$name" "$(tail -n1 "$log")"
  else fail=$((fail+1)); failed+=("$name"); printf 'FAIL  %-34s (exit %d, log %s)\n' "$name" "$rc" "$log"
       tail -n 15 "$log" | sed 's/^/      | /'; fi
done
echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
