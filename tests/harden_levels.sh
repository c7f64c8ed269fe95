#!/usr/bin/env bash
# The hardening levels keep every promise the base level keeps: glibc's
# semantics (api_glibc), the sized frees (unit_sized), threads and
# large-block reallocs, and the whole fuzz corpus (fork included) under the
# oracle (the reference model, and glibc for the sequential targets), at
# harden=1, 2 and 3.  (The corrupt target picks its level per input; tests/attacks.sh
# runs the misuse programs at every level.)  The tests that pin the base
# level's own mechanics (the thread cache's head, when a span decommits, a
# mapping reused from the cache, in-use bytes with blocks held back) are
# not run here: those mechanics are what the levels change.
set -uo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" tests fuzz-replay-build >/dev/null || { echo "FAIL: build"; exit 1; }
read -r -a targets <<<"$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)"
fail=0 runs=0
for level in 1 2 3; do
  export VIGIL_OPTIONS=harden=$level
  for t in api_glibc unit_sized unit_threads unit_core seed_large_realloc; do
    out=$(timeout 300 "$BUILD/tests/$t" 2>&1) || { echo "FAIL: $t at harden=$level:"; echo "$out" | grep -v '^ok' | tail -5; fail=1; }
    runs=$((runs + 1))
  done
  for t in "${targets[@]}"; do
    [ "$t" = corrupt ] && continue
    dirs=()
    for d in "corpus/$t" "corpus/regressions/$t"; do [ -d "$d" ] && dirs+=("$d"); done
    out=$(timeout 300 "$BUILD/fuzz/replay/$t" -q -n 1 "${dirs[@]}" 2>&1) || { echo "FAIL: replay $t at harden=$level:"; echo "$out" | tail -5; fail=1; }
    count=$(echo "$out" | sed -n 's/.*replayed \([0-9]*\).*/\1/p' | tail -1)
    [ "${count:-0}" -gt 0 ] || { echo "FAIL: replay $t at harden=$level replayed nothing"; fail=1; }
    runs=$((runs + 1))
  done
  echo "ok harden=$level"
done
# The level is real: the same program is stopped at 1 and not at 0.
cat >"${TMPDIR:-/tmp}/vigil-harden-nul.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
int main(void) {
  char *(*volatile m)(size_t) = (char *(*)(size_t))malloc;
  char *p = m(24);
  memset(p, 'a', 25); /* one byte too many */
  free(p);
  return 0;
}
EOF
gcc -O1 -fno-builtin -o "$BUILD/tests/harden_nul" "${TMPDIR:-/tmp}/vigil-harden-nul.c" || { echo "FAIL: build harden_nul"; exit 1; }
lib=$(realpath "$BUILD/libvigil.so")
VIGIL_OPTIONS=harden=0 LD_PRELOAD=$lib "$BUILD/tests/harden_nul" 2>/dev/null || { echo "FAIL: a 1-byte overflow stopped harden=0, which has no canary"; fail=1; }
err=$(VIGIL_OPTIONS=harden=1 LD_PRELOAD=$lib "$BUILD/tests/harden_nul" 2>&1) && { echo "FAIL: a 1-byte overflow passed harden=1"; fail=1; }
[[ $err == "vigil: overflow past the end of a block at 0x"* ]] || { echo "FAIL: harden=1 said '$err'"; fail=1; }
err=$(VIGIL_OPTIONS=harden=canary LD_PRELOAD=$lib "$BUILD/tests/harden_nul" 2>&1) && { echo "FAIL: harden=canary (the level's name) did not stop it"; fail=1; }
err=$(VIGIL_OPTIONS=harden=9 LD_PRELOAD=$lib "$BUILD/tests/harden_nul" 2>&1) || { echo "FAIL: harden=9 did not keep the default (0): $err"; fail=1; }
[[ $err == *"bad value '9' for harden"* ]] || { echo "FAIL: harden=9 gave no warning: '$err'"; fail=1; }
[ $fail -eq 0 ] && echo "harden_levels: $runs runs at harden=1..3 consistent; the canary stops at 1 what 0 lets through"
exit $fail
