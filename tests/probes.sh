#!/usr/bin/env bash
# USDT probes: libvigil.so must carry SystemTap (stapsdt) notes for provider
# `vigil` naming every probe the sources place (segment_map, segment_unmap,
# decommit, trim, threshold, large_remap), so perf/bpftrace/stap can attach.
#
# Control, proving the readelf parsing can tell "probes" from "no probes":
# src/segment.c is compiled twice with the Makefile's own CFLAGS_LIB, once as
# is and once with -DVIGIL_NO_SDT; the first object must list segment_map and
# the second must list no vigil probe at all.
# Exit: 0 pass, 1 fail.
set -euo pipefail
BUILD=${BUILD:-build}
CC=${CC:-gcc}
want=(segment_map segment_unmap decommit trim threshold large_remap)

command -v readelf >/dev/null || { echo "FAIL: readelf not found: install the Debian package binutils"; exit 1; }
lib=$BUILD/libvigil.so
[ -f "$lib" ] || { echo "FAIL: $lib not found (run make first)"; exit 1; }

# The names of the provider-vigil stapsdt probes in an ELF file, one a line.
vigil_probes() {
  readelf -n "$1" | awk '/^ *Provider:/ {p = $2} /^ *Name:/ && p == "vigil" {print $2; p = ""}' | sort -u
}

have=$(vigil_probes "$lib")
echo "probes in $lib: ${have//$'\n'/ }"
fail=0
for p in "${want[@]}"; do
  grep -qx "$p" <<<"$have" || { echo "FAIL: probe vigil:$p missing from $lib"; fail=1; }
done
if [ $fail -ne 0 ]; then
  [ -n "$have" ] || echo "hint: no vigil probes at all: is <sys/sdt.h> installed (Debian package systemtap-sdt-dev)?"
  exit 1
fi

# --- control ---------------------------------------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/vigil-probes.XXXXXX")
trap 'rm -rf "$T"' EXIT
# shellcheck disable=SC2016  # $(CFLAGS_LIB) is make's, not the shell's
cflags=$(make -s --no-print-directory --eval='vg-print-cflags: ; @echo $(CFLAGS_LIB)' vg-print-cflags CC="$CC")
[ -n "$cflags" ] || { echo "FAIL: could not read CFLAGS_LIB from the Makefile"; exit 1; }
# shellcheck disable=SC2086  # $cflags is a word list
$CC $cflags -c src/segment.c -o "$T/sdt.o"
# shellcheck disable=SC2086
$CC $cflags -DVIGIL_NO_SDT -c src/segment.c -o "$T/nosdt.o"
with=$(vigil_probes "$T/sdt.o")
without=$(vigil_probes "$T/nosdt.o")
echo "control: segment.o lists: ${with//$'\n'/ }; with -DVIGIL_NO_SDT: ${without:-(none)}"
grep -qx segment_map <<<"$with" || { echo "FAIL: control: segment.o built normally lacks vigil:segment_map"; exit 1; }
[ -z "$without" ] || { echo "FAIL: control: segment.o built with -DVIGIL_NO_SDT still lists vigil probes"; exit 1; }
echo "PASS: all ${#want[@]} probes present; the check distinguishes a build without probes"
