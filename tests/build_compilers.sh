#!/usr/bin/env bash
# Both compilers build the three libraries warning-free, and the two builds
# export what they promise:
#   make all WERROR=1 with CC=gcc into $BUILD-werror-gcc and CC=clang into
#   $BUILD-werror-clang, from scratch (a stale object could hide a warning);
#   libvigil_prefixed.a (clang build) defines no standard name (malloc, free,
#   ...) and exports nothing with default visibility but vigil_ names;
#   libvigil.so (clang build) exports every standard name and its vigil_ twin.
# The names are the vigil_ functions declared in src/vigil.h.
# Exit: 0 pass, 1 fail.
set -euo pipefail
BUILD=${BUILD:-build}

for tool in gcc clang nm readelf; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found (Debian packages: gcc clang binutils)"; exit 1; }
done

for cc in gcc clang; do
  dir=$BUILD-werror-$cc
  rm -rf "$dir"
  if ! out=$(make -s -j2 all BUILD="$dir" CC=$cc WERROR=1 2>&1); then
    echo "FAIL: $cc build with WERROR=1 failed:"
    echo "$out"
    exit 1
  fi
  [ -z "$out" ] || { echo "note: $cc build printed:"; echo "$out"; }
  echo "ok: $cc builds libvigil.so, libvigil.a, libvigil_prefixed.a with -Werror ($dir)"
done

names=$(sed -n 's/.*[ *]vigil_\([a-z_0-9]*\)(.*/\1/p' src/vigil.h | sort -u)
for n in malloc free calloc realloc; do
  grep -qx "$n" <<<"$names" || { echo "FAIL: could not read the function list from src/vigil.h (no vigil_$n)"; exit 1; }
done
echo "names checked ($(wc -l <<<"$names")): ${names//$'\n'/ }"

pfx=$BUILD-werror-clang/libvigil_prefixed.a
so=$BUILD-werror-clang/libvigil.so
pfx_defined=$(nm -g --defined-only "$pfx" | awk 'NF == 3 {print $3}' | sort -u)
pfx_public=$(readelf -sW "$pfx" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" && $7 != "UND" {print $8}' | sort -u)
so_defined=$(nm -D --defined-only "$so" | awk 'NF == 3 {print $3}' | sort -u)
fail=0
for n in $names; do
  if grep -qx "$n" <<<"$pfx_defined"; then echo "FAIL: $pfx defines the standard name $n"; fail=1; fi
  grep -qx "vigil_$n" <<<"$pfx_defined" || { echo "FAIL: $pfx lacks vigil_$n"; fail=1; }
  grep -qx "$n" <<<"$so_defined" || { echo "FAIL: $so does not export $n"; fail=1; }
  grep -qx "vigil_$n" <<<"$so_defined" || { echo "FAIL: $so does not export vigil_$n"; fail=1; }
done
other=$(grep -v '^vigil_' <<<"$pfx_public" || true)
[ -z "$other" ] || { echo "FAIL: $pfx exports non-vigil_ names with default visibility: ${other//$'\n'/ }"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "ok: $pfx exports only vigil_ names ($(wc -l <<<"$pfx_public") symbols); $so exports both forms"
echo "PASS"
