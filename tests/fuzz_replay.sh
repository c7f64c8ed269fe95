#!/usr/bin/env bash
# Replays every seed (corpus/<target>/) and every regression
# (corpus/regressions/<target>/) through the replay drivers, so each input
# runs under the oracle: the reference model, and glibc for the sequential
# targets.  The threads target runs each input 100 times in a row (its
# handoffs are decided before it runs, so each run must end the same way:
# issue 11), the fork target three times.
set -euo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" fuzz-replay-build >/dev/null
total=0
read -r -a targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
for t in "${targets[@]}"; do
  dirs=()
  for d in "corpus/$t" "corpus/regressions/$t"; do [ -d "$d" ] && dirs+=("$d"); done
  [ ${#dirs[@]} -gt 0 ] || { echo "FAIL: no corpus for $t"; exit 1; }
  n=1
  case $t in threads) n=100 ;; fork) n=3 ;; esac
  out=$(timeout 300 "$BUILD/fuzz/replay/$t" -q -n "$n" "${dirs[@]}" 2>&1) || {
    echo "FAIL: $t:"; echo "$out" | tail -20; exit 1; }
  count=$(echo "$out" | sed -n 's/.*replayed \([0-9]*\).*/\1/p' | tail -1)
  [ "${count:-0}" -gt 0 ] || { echo "FAIL: $t replayed nothing: $out"; exit 1; }
  echo "ok $t: $count runs"
  total=$((total + count))
done

# replay -b, which make fuzz-bench prices in each target's floor, counts
# exactly the bytes a program fills and the oracle checks: 100 filled,
# then 100 compared by the check op and 100 by the free, three times over.
prog=$(mktemp --suffix=.ops)
trap 'rm -f "$prog"' EXIT
printf 'malloc slot=0 size=100\nfill slot=0 byte=7\ncheck slot=0\nfree slot=0\n' >"$prog"
out=$("$BUILD/fuzz/replay/api" -q -b -n 3 "$prog")
echo "$out" | grep -qx 'model bytes: filled=300 checked=600' || {
  echo "FAIL: replay -b counted wrong (want filled=300 checked=600):"; echo "$out"; exit 1; }
echo "ok replay -b: filled=300 checked=600"
echo "fuzz_replay: $total runs through the oracle, all consistent"
