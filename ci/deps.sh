#!/usr/bin/env bash
# Installs the Debian packages vigil needs, by name, and nothing else.
# Idempotent: packages already present are not touched, and when everything
# is there it only runs dpkg-query (fast enough to call from every make target).
#
#   ci/deps.sh [build|check|bench|fuzz|qemu|qemu-fuzz|triage|oss-fuzz|traces|all]...   (default: check)
#
# qemu-fuzz wants packages of the foreign architecture arm64 (the aarch64
# clang runtime, for libFuzzer under qemu-aarch64): it adds that
# architecture to dpkg first, and refreshes the package lists once, when it
# is missing.  amd64 packages install as before afterwards.
set -euo pipefail

build=(gcc make clang binutils systemtap-sdt-dev libc6-dev)
qemu=("${build[@]}" qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-powerpc64le-linux-gnu
      libc6-dev-ppc64el-cross gcc-s390x-linux-gnu libc6-dev-s390x-cross gcc-riscv64-linux-gnu
      libc6-dev-riscv64-cross gcc-i686-linux-gnu libc6-dev-i386-cross gcc-arm-linux-gnueabihf
      libc6-dev-armhf-cross)
# make triage: every host variant and QEMU target, libFuzzer and afl-tmin to
# minimize, gdb for stacks.
triage=("${qemu[@]}" libclang-rt-14-dev libfuzzer-14-dev llvm-14 valgrind afl++ gdb gdb-multiarch)
# libFuzzer for aarch64 under QEMU (qemu-targets/fuzz.sh): clang's arm64
# runtime (libclang_rt.{fuzzer,asan,ubsan_standalone}-aarch64.a) and the
# cross libstdc++ that libclang_rt.fuzzer needs; the rest is the qemu group.
qemu_fuzz=("${qemu[@]}" clang libclang-rt-14-dev:arm64 libstdc++-12-dev-arm64-cross)
# make check runs the QEMU matrix, make triage (tests/triage_mutant.sh) and
# make qemu-fuzz on aarch64 and ppc64le (tests/qemu_fuzz_smoke.sh).
check=("${triage[@]}" "${qemu_fuzz[@]}" g++ strace python3 sqlite3 git perl util-linux procps coreutils bc patch spin zip unzip file)
# strace: bench/run.py counts the syscalls of some workloads under it.
bench=("${build[@]}" python3 libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
       libclang-rt-14-dev gnuplot-nox hyperfine strace)
fuzz=("${build[@]}" libclang-rt-14-dev libfuzzer-14-dev afl++ python3)
# make oss-fuzz-check: OSS-Fuzz's toolchain as far as Debian has it (clang,
# libFuzzer, AFL++'s driver), zip for the seed corpora, file and objdump for
# check_build's checks.
oss_fuzz=("${fuzz[@]}" zip unzip file git)
# make valgrind-check: memcheck, helgrind, drd and the client-request headers.
valgrind=("${build[@]}" valgrind)
# make traces: the programs whose malloc calls become seeds (fuzz/trace/record.sh).
traces=("${build[@]}" python3 git sqlite3)

want=()
[ $# -eq 0 ] && set -- check
for group in "$@"; do
  case "$group" in
    build) want+=("${build[@]}") ;;
    check) want+=("${check[@]}") ;;
    bench) want+=("${bench[@]}") ;;
    fuzz)  want+=("${fuzz[@]}") ;;
    qemu)  want+=("${qemu[@]}") ;;
    qemu-fuzz) want+=("${qemu_fuzz[@]}") ;;
    triage) want+=("${triage[@]}") ;;
    oss-fuzz) want+=("${oss_fuzz[@]}") ;;
    traces) want+=("${traces[@]}") ;;
    valgrind) want+=("${valgrind[@]}") ;;
    all)   want+=("${check[@]}" "${bench[@]}" "${fuzz[@]}" "${qemu_fuzz[@]}" "${oss_fuzz[@]}" "${traces[@]}") ;;
    *) echo "ci/deps.sh: unknown group '$group' (build, check, bench, fuzz, qemu, qemu-fuzz, triage, oss-fuzz, traces, valgrind, all)" >&2; exit 2 ;;
  esac
done

missing=()
native=$(dpkg --print-architecture)
for p in $(printf '%s\n' "${want[@]}" | sort -u); do
  # Installed for the native arch (or arch all), or for the one after a ':'
  # (with a foreign arch added, plain names can list two architectures).
  case $p in *:*) arches="${p#*:}" ;; *) arches="$native all" ;; esac
  dpkg-query -W -f='${db:Status-Status} ${Architecture}\n' "${p%%:*}" 2>/dev/null |
    grep -qxE "installed (${arches// /|})" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ci/deps.sh: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "ci/deps.sh: need root to install: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# A foreign architecture named by a missing package (name:arch) is added to
# dpkg, and its package lists fetched, before the install.
refresh=0
for a in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\(.*\)$/\1/p' | sort -u); do
  [ "$a" = "$(dpkg --print-architecture)" ] && continue
  if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
    echo "ci/deps.sh: dpkg --add-architecture $a" >&2
    dpkg --add-architecture "$a"
    refresh=1
  fi
done
# Refresh the lists only when apt has never fetched them, an architecture
# was just added, or the install fails.
if [ $refresh = 1 ] || ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then apt-get update -qq; fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
