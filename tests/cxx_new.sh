#!/usr/bin/env bash
# C++'s operator new and delete come from vigil (src/cxx.c): tests/cxx_new.cc,
# a C++ program, preloads libvigil.so and uses every form of new and delete
# with honest sizes, an impossible size (the new_handler, then
# std::bad_alloc thrown through vigil's C frames), nothrow and aligned new.
# Then a sized delete with a wrong size and an aligned delete with a wrong
# alignment must each die with vigil's message; without vigil the same
# program exits 0 (libstdc++'s operators ignore both), so the message is
# vigil's check.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null || { echo "FAIL: $CXX missing: install the Debian package g++ (bash ci/deps.sh check)"; exit 1; }
lib=$(realpath "$BUILD/libvigil.so")
bin=$BUILD/tests/cxx_new
mkdir -p "$BUILD/tests"
"$CXX" -std=c++17 -O1 -g -Wall -Wextra $([ -n "${WERROR:-}" ] && echo -Werror) -fsized-deallocation -faligned-new \
  -o "$bin" tests/cxx_new.cc || { echo "FAIL: tests/cxx_new.cc does not build"; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
log=$BUILD/tests/cxx_new.log
if LD_PRELOAD=$lib "$bin" >"$log" 2>&1; then
  echo "ok: every form of new and delete, bad_alloc after the new_handler, nothrow and aligned new ($(tail -n1 "$log"))"
else
  fail "cxx_new under vigil: $(cat "$log")"
fi
for c in "sized|vigil: sized delete with a size the block does not have at 0x" \
  "aligned|vigil: aligned delete with a wrong alignment at 0x"; do
  name=${c%%|*} want=${c#*|} rc=0
  { LD_PRELOAD=$lib "$bin" "$name" >"$log" 2>&1; } 2>/dev/null || rc=$?
  if [ $rc -ne 134 ] || ! grep -q "^$want" "$log"; then
    fail "$name delete: exit $rc, want SIGABRT and '$want': $(head -c 300 "$log")"; continue
  fi
  rc=0
  "$bin" "$name" >"$log" 2>&1 || rc=$?
  [ $rc -eq 0 ] || { fail "$name delete without vigil: exit $rc (the control must pass)"; continue; }
  echo "ok: $name delete: '$want…'; without vigil it passes unseen"
done
[ $fails -eq 0 ] || exit 1
echo "cxx_new: C++'s new and delete are vigil's, and sized and aligned deletes are checked"
