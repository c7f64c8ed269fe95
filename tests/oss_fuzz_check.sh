#!/bin/bash
# make oss-fuzz-check's machinery, briefly: ci/oss-fuzz/check.sh on the tree
# for libFuzzer+ASan, each target fuzzed for its seeds and 100 inputs from
# seed 1337 (a fixed count, not a time), must pass, and on a
# scratch copy with fuzz/mutants/usable-minus-16.patch planted it must fail,
# at the seed corpus (the api seeds check malloc_usable_size).  The full
# check (four configurations, 10 s each) is `make oss-fuzz-check`.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
bash "$ROOT/ci/deps.sh" oss-fuzz >/dev/null || exit 1
tmp=$(mktemp -d /tmp/vigil-ossfuzz-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

if bash "$ROOT/ci/oss-fuzz/check.sh" -n 100 libfuzzer-address >"$tmp/clean.log" 2>&1; then
  echo "ok: the tree passes ($(grep -c '  ok: ' "$tmp/clean.log") checks)"
else
  grep -E "FAIL|oss-fuzz-check" "$tmp/clean.log"
  echo "FAIL: check.sh fails on the tree"; fails=1
fi

mkdir -p "$tmp/scratch"
(cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$tmp/scratch"
(cd "$tmp/scratch" && git init -q && git add -A && patch -s -p1 <fuzz/mutants/usable-minus-16.patch) || exit 1
bash "$tmp/scratch/ci/oss-fuzz/check.sh" -n 1 libfuzzer-address >"$tmp/mutant.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "FAIL: a seed crashes" "$tmp/mutant.log"; then
  echo "ok: with usable-minus-16 planted it fails at the seed corpus"
else
  grep -E "FAIL|oss-fuzz-check" "$tmp/mutant.log"
  tail -5 "$tmp/mutant.log"; echo "FAIL: check.sh did not catch the planted mutant at the seed corpus (exit $rc)"; fails=1
fi
exit $fails
