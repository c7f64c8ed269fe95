#!/usr/bin/env bash
# The fork op's hang detection (diff/oracle.c): a fork child that hangs is
# killed at the watchdog's deadline and reported at the op it hung in.
# VIGIL_ORACLE_HANG_AT makes the child of corpus/fork/child-alloc.ops hang
# on purpose, and VIGIL_ORACLE_FORK_DEADLINE_MS shortens the deadline from
# 10 s to 0.5 s.  The same input passes without the hang, with the short
# deadline, with a bad knob (reported, default kept) and with the hang
# placed on an op of the parent (only children hang).
set -euo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" fuzz-replay-build >/dev/null
replay="$BUILD/fuzz/replay/fork"
seed=corpus/fork/child-alloc.ops # ops 0-5 set up, op 6 forks, ops 7-16 run in the child
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# run ENV... : the replay of the seed, with its output in $out, its status in
# $rc and its time in ms in $ms.
run() {
  local t0 t1
  t0=$(date +%s%N)
  set +e
  out=$(env "$@" timeout 60 "$replay" -q "$seed" 2>&1)
  rc=$?
  set -e
  t1=$(date +%s%N)
  ms=$(((t1 - t0) / 1000000))
}

run VIGIL_ORACLE_FORK_DEADLINE_MS=500
[ "$rc" = 0 ] || bad "a healthy child with a 0.5 s deadline: status $rc: $out"

want="vigil oracle: fork: op #9 'check slot=2': the fork child (of op #6) hung in this op (killed after 0.5 s)"
run VIGIL_ORACLE_FORK_DEADLINE_MS=500 VIGIL_ORACLE_HANG_AT=9
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
  bad "a child hung at op #9: status $rc (want an abort at the deadline): $out"
elif ! grep -qxF "$want" <<<"$out"; then
  bad "a child hung at op #9: the report is not '$want': $out"
elif [ "$ms" -ge 5000 ]; then
  bad "a child hung at op #9 was reported after $ms ms, not at the 0.5 s deadline"
else
  echo "ok a child hung at op #9: reported in $ms ms: $want"
fi

run VIGIL_ORACLE_FORK_DEADLINE_MS=soon
[ "$rc" = 0 ] || bad "a bad deadline knob: status $rc: $out"
grep -qF "vigil oracle: VIGIL_ORACLE_FORK_DEADLINE_MS='soon' is not a number from 1 to 600000; ignored" <<<"$out" ||
  bad "a bad deadline knob was not reported: $out"

run VIGIL_ORACLE_FORK_DEADLINE_MS=500 VIGIL_ORACLE_HANG_AT=2
[ "$rc" = 0 ] || bad "the hang knob on a parent's op: status $rc: $out"

[ "$fail" = 0 ] || exit 1
echo "fork_hang: a hung fork child is killed at the deadline and reported at its op"
