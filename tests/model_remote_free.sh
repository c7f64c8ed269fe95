#!/usr/bin/env bash
# Issue 4 / seed 002: the remote-free protocol (model/remote_free.pml) checked
# with spin under a weak memory model (see model/README.md).  Three runs, each
# an exhaustive safety search (spin -a, pan built with gcc -DSAFETY):
#   1. vigil's orders (release push CAS, acquire take, acq_rel close): MUST
#      pass with no errors; the state count is printed;
#   2. -DPUSH_RELAXED: MUST fail; the counterexample is shown (spin -t -p);
#   3. -DTAKE_RELAXED: MUST fail; likewise.
# Outputs go to $BUILD/model/<variant>/.  Exit: 0 pass, 1 fail.
set -uo pipefail
BUILD=${BUILD:-build}
root=$(pwd)
model=$root/model/remote_free.pml
[ -f "$model" ] || { echo "FAIL: $model not found (run from the repository root)"; exit 1; }
if ! command -v spin >/dev/null; then
  echo "FAIL: spin not found: install the Debian package spin (ci/deps.sh installs it)"
  exit 1
fi
command -v gcc >/dev/null || { echo "FAIL: gcc not found"; exit 1; }
mkdir -p "$BUILD/model"
out=$(cd "$BUILD/model" && pwd)
status=0

# run NAME EXPECT(pass|fail) [spin -D flags...]
run() {
  local name=$1 expect=$2; shift 2
  local d=$out/$name
  rm -rf "$d"; mkdir -p "$d"
  cp "$model" "$d/remote_free.pml"
  if ! (cd "$d" && spin "$@" -a remote_free.pml >spin.log 2>&1); then
    cat "$d/spin.log"; echo "FAIL [$name]: spin -a failed"; status=1; return
  fi
  if ! (cd "$d" && gcc -O2 -w -DSAFETY -o pan pan.c >gcc.log 2>&1); then
    cat "$d/gcc.log"; echo "FAIL [$name]: compiling pan failed"; status=1; return
  fi
  (cd "$d" && timeout 120 ./pan -m100000 >pan.log 2>&1)
  local errors states
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.log" | head -n1)
  states=$(awk '/states, stored/ {print $1; exit}' "$d/pan.log")
  if [ -z "$errors" ]; then
    cat "$d/pan.log"; echo "FAIL [$name]: pan gave no verdict"; status=1; return
  fi
  if grep -q "max search depth too small" "$d/pan.log"; then
    echo "FAIL [$name]: search truncated (max depth)"; status=1; return
  fi
  if [ "$expect" = pass ]; then
    if [ "$errors" = 0 ]; then
      echo "ok   [$name] no errors, exhaustive search: $states states stored"
    else
      grep -E "violated|error" "$d/pan.log"
      echo "FAIL [$name] expected no errors, got $errors ($d/pan.log)"; status=1
    fi
  else
    if [ "$errors" != 0 ] && [ -f "$d/remote_free.pml.trail" ]; then
      echo "ok   [$name] counterexample found as expected: $(grep -m1 'violated' "$d/pan.log") ($states states)"
      echo "     trail (spin -t -p; the model's event lines; full trail in $d/trail.log):"
      (cd "$d" && spin "$@" -t -p remote_free.pml >trail.log 2>&1)
      grep -v 'printf(' "$d/trail.log" | grep -o 'MSC: .*' | sed 's/^MSC: /       /'
      grep -E 'assertion violated' "$d/trail.log" | head -n1 | sed 's/^/     /'
    else
      echo "FAIL [$name] expected a counterexample, pan found none ($states states)"; status=1
    fi
  fi
}

start=$(date +%s)
run vigil pass
run push_relaxed fail -DPUSH_RELAXED
run take_relaxed fail -DTAKE_RELAXED
echo "runtime: $(( $(date +%s) - start ))s"
[ $status -eq 0 ] && echo "PASS: the model passes with vigil's orders and rejects both relaxed variants"
exit $status
