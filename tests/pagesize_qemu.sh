#!/usr/bin/env bash
# Seed 003 under other page sizes: builds tests/seed_large_pages.c with the
# library sources (prefixed build) for aarch64 and for the host, then runs it
# under qemu-aarch64 with 4K, 16K and 64K pages and natively.  Each run must
# pass and must report the page size it was given, which proves the page size
# really changed.  Prints one table row per run: arch, page size, verdict.
#
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user (ci/deps.sh).
# Outputs go to $BUILD/qemu/ (binaries, build logs, one log per run).
# Re-run a single case by hand, e.g.:
#   qemu-aarch64 -p 65536 build/qemu/seed_large_pages.aarch64
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CC=${CC:-gcc}
out=$BUILD/qemu
mkdir -p "$out"
PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"

missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=("aarch64-linux-gnu-gcc (package gcc-aarch64-linux-gnu)")
[ -e /usr/aarch64-linux-gnu/lib/libc.a ] || missing+=("aarch64 static libc (package libc6-dev-arm64-cross)")
command -v qemu-aarch64 >/dev/null || missing+=("qemu-aarch64 (package qemu-user)")
command -v "$CC" >/dev/null || missing+=("native compiler '$CC'")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'pagesize_qemu: missing %s\n' "${missing[@]}" >&2
  echo "pagesize_qemu: FAIL: install the Debian packages: apt-get install --no-install-recommends $PKGS (ci/deps.sh)"
  exit 1
fi

# Same flags for both builds.  sys/sdt.h is not in the cross sysroot, so the
# probes are off (VIGIL_NO_SDT) for both, to keep the builds alike.
FLAGS=(-std=gnu11 -O2 -g -pthread -Wall -Wextra -DVIGIL_PREFIX -DVIGIL_NO_SDT -Isrc)
SRCS=(src/*.c tests/seed_large_pages.c)
inputs=(src tests/seed_large_pages.c tests/testlib.h tests/pagesize_qemu.sh)

# build NAME COMPILER [extra flags]: rebuilds $out/seed_large_pages.NAME when
# it is missing, older than any input, or was built by another command.
build() {
  local name=$1 cc=$2 bin=$out/seed_large_pages.$1
  shift 2
  local cmd="$cc ${FLAGS[*]} $* -o $bin ${SRCS[*]}"
  if [ -x "$bin" ] && [ "$(cat "$bin.cmd" 2>/dev/null)" = "$cmd" ] &&
     [ -z "$(find "${inputs[@]}" -newer "$bin" -print -quit)" ]; then return 0; fi
  rm -f "$bin" "$bin.cmd"
  "$cc" "${FLAGS[@]}" "$@" -o "$bin" "${SRCS[@]}" >"$out/build-$name.log" 2>&1 || return 1
  printf '%s\n' "$cmd" >"$bin.cmd"
}

start=$(date +%s)
# Two compilers at once at most (2 cores).
build aarch64 aarch64-linux-gnu-gcc -static & pid_cross=$!
build native "$CC" & pid_native=$!
wait $pid_cross; rc_cross=$?
wait $pid_native; rc_native=$?
for pair in "aarch64:$rc_cross" "native:$rc_native"; do
  name=${pair%%:*} rc=${pair#*:}
  if [ "$rc" -ne 0 ]; then
    sed 's/^/  | /' "$out/build-$name.log" | tail -n 30
    echo "pagesize_qemu: FAIL: the $name build failed (log $out/build-$name.log)"
    exit 1
  fi
done

host_ps=$(getconf PAGESIZE)
host_arch=$(uname -m)
unset QEMU_PAGESIZE QEMU_LD_PREFIX QEMU_SET_ENV QEMU_UNSET_ENV
rows=() failures=0
# run ARCH EXPECTED_PAGE_SIZE COMMAND...
run() {
  local arch=$1 want=$2 log=$out/run-$1-$2.log
  shift 2
  local t0 t1 rc seen verdict
  t0=$(date +%s.%N)
  timeout 60 "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  seen=$(sed -n 's/^page size: \([0-9]*\)$/\1/p' "$log" | head -n1)
  if [ $rc -eq 124 ]; then
    verdict="FAIL (timed out after 60 s)"
  elif [ $rc -ne 0 ]; then
    verdict="FAIL (exit $rc: $(grep -c 'CHECK(' "$log") failed checks)"
  elif [ "$seen" != "$want" ]; then
    verdict="FAIL (page size seen: ${seen:-none}, wanted $want)"
  elif ! grep -q '^seed_large_pages: [0-9]* checks, 0 failed$' "$log"; then
    verdict="FAIL (no verdict line)"
  else
    verdict=PASS
  fi
  rows+=("$(printf '%-8s %-10s %-5s %s' "$arch" "$want" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" "$verdict")")
  if [ "$verdict" != PASS ]; then
    failures=$((failures + 1))
    echo "---- $arch, page size $want: $verdict"
    echo "     reproduce: $*"
    echo "     log: $log"
    # each failing check once, with how often it failed and its first message
    grep -E '^[^ ]+:[0-9]+: CHECK\(' "$log" |
      awk '{ k = $1; n[k]++; if (!(k in first)) { first[k] = $0; order[++m] = k } }
           END { for (i = 1; i <= m; i++) printf "     | %dx %s\n", n[order[i]], first[order[i]] }' | head -n 12
    # the part that was running when it stopped
    [ $rc -ne 0 ] && tail -n 5 "$log" | sed 's/^/     : /'
  fi
}

run "$host_arch" "$host_ps" "$out/seed_large_pages.native"
for ps in 4096 16384 65536; do
  run aarch64 "$ps" qemu-aarch64 -p "$ps" "$out/seed_large_pages.aarch64"
done

echo
printf '%-8s %-10s %-5s %s\n' arch pagesize secs verdict
printf '%s\n' "${rows[@]}"
echo "pagesize_qemu: ${#rows[@]} runs, $failures failed, $(( $(date +%s) - start )) s in all"
[ $failures -eq 0 ]
