# qemu-targets/lib.sh: what every QEMU-matrix script shares (sourced from the
# top of the tree by run.sh, fuzz.sh and fuzz/triage.sh): reading a target
# file, checking its tools, building it, and the command prefix that runs a
# guest binary at one page size.
#
# Reads NATIVE (1: a real host of the arch, no QEMU), BUILD, MAKE, and QT_WHO
# (the name messages start with).

BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
QT_WHO=${QT_WHO:-qemu}
NATIVE=${NATIVE:-}
[ "$NATIVE" = 0 ] && NATIVE=
QT_KEYS=(TRIPLE CC QEMU SYSROOT PAGESIZES EXTRA_CFLAGS PACKAGES KNOWN_FAIL RESERVED_VA)
QT_REQUIRED=(TRIPLE CC QEMU SYSROOT PAGESIZES PACKAGES)

# Environment that would change what QEMU or the guest does.
unset QEMU_PAGESIZE QEMU_LD_PREFIX QEMU_SET_ENV QEMU_UNSET_ENV QEMU_STRACE QEMU_CPU \
      QEMU_GUEST_BASE QEMU_RESERVED_VA QEMU_LOG VIGIL_OPTIONS MALLOC_CHECK_ MALLOC_PERTURB_
# QEMU 7.2 keeps its translation blocks in a GTree, whose nodes come from
# GLib's GSlice (Debian 12's GLib 2.74 still has it), and GSlice is not
# fork-safe: a fork child of a threaded guest can hang in its first
# translation (README.md, "Known QEMU bugs").  GLib reads G_SLICE once, when
# QEMU starts; always-malloc sends GSlice to glibc's malloc, which is.
export G_SLICE=always-malloc

# The targets: every file in qemu-targets/ without an extension (not the
# folders: bugs/ holds programs that show QEMU's own bugs).
qt_all() {
  local g
  for g in qemu-targets/*; do
    if [ -f "$g" ] && [[ $(basename "$g") != *.* ]]; then basename "$g"; fi
  done
}

# The target file of the host's arch (for NATIVE=1 without ARCHES).
qt_host_arch() {
  case $(uname -m) in
    aarch64|arm64) echo aarch64 ;;
    ppc64le) echo ppc64le ;;
    s390x) echo s390x ;;
    riscv64) echo riscv64 ;;
    i?86) echo i686 ;;
    armv7*|armv8l) echo armhf ;;
    *) return 1 ;;
  esac
}

# qt_load ARCH: the target file's keys into T_<KEY> (sourced in a subshell,
# so its CC does not leak into this one).  Native: the host's own compiler
# when it targets this triple (Debian's gcc on arm64 is aarch64-linux-gnu),
# its libc, and the host's page size.
qt_load() {
  local f=qemu-targets/$1 k
  if [ ! -f "$f" ]; then
    echo "$QT_WHO: FAIL: unknown arch '$1': no file $f (targets: $(qt_all | xargs))"
    return 1
  fi
  for k in "${QT_KEYS[@]}"; do unset "T_$k"; done
  # shellcheck disable=SC1090
  eval "$(unset "${QT_KEYS[@]}"; . "./$f" >/dev/null || exit 1
          for k in "${QT_KEYS[@]}"; do printf 'T_%s=%q\n' "$k" "${!k-}"; done)" || {
    echo "$QT_WHO: FAIL: $f does not source cleanly"; return 1; }
  for k in "${QT_REQUIRED[@]}"; do
    local v=T_$k
    [ -n "${!v}" ] || { echo "$QT_WHO: FAIL: $f sets no $k"; return 1; }
  done
  [ -n "$NATIVE" ] || return 0
  if [ "$(gcc -dumpmachine 2>/dev/null)" = "$T_TRIPLE" ]; then
    T_CC=gcc T_SYSROOT=
    T_PACKAGES="gcc libc6-dev binutils"
  fi
  T_PAGESIZES=$(getconf PAGESIZE)
}

# qt_tools ARCH (after qt_load): false, naming the Debian packages, when the
# compiler, its static libc or QEMU is missing.
qt_tools() {
  local missing=()
  command -v "$T_CC" >/dev/null || missing+=("$T_CC")
  command -v "$T_TRIPLE-ar" >/dev/null || missing+=("$T_TRIPLE-ar")
  if [ -n "$T_SYSROOT" ]; then
    [ -e "$T_SYSROOT/lib/libc.a" ] || missing+=("$T_SYSROOT/lib/libc.a (static libc)")
    [ -e "$T_SYSROOT/include/pthread.h" ] || [ -e "$T_SYSROOT/include/stdio.h" ] ||
      missing+=("$T_SYSROOT/include (target headers)")
  fi
  [ -n "$NATIVE" ] || command -v "$T_QEMU" >/dev/null || missing+=("$T_QEMU")
  command -v "$MAKE" >/dev/null || missing+=("$MAKE (Debian package make)")
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$QT_WHO: FAIL: $1: missing ${missing[*]}"
  echo "$QT_WHO:   install the Debian packages: apt-get install --no-install-recommends $T_PACKAGES"
  return 1
}

# qt_build ARCH (after qt_load): the static cross build of qemu-targets/qemu.mk
# into QT_OUT=$BUILD/qemu/[native-]ARCH (log: $QT_OUT/build.log); the command
# is QT_BUILD_CMD.  Returns make's status.
qt_build() {
  local bname=${NATIVE:+native-}$1
  QT_OUT=$BUILD/qemu/$bname
  mkdir -p "$QT_OUT"
  QT_BUILD_CMD=("$MAKE" -s -j2 -f qemu-targets/qemu.mk "BUILD=$BUILD" "QEMU_BUILD_ARCH=$bname"
                "QEMU_CC=$T_CC" "QEMU_TRIPLE=$T_TRIPLE" "QEMU_EXTRA_CFLAGS=$T_EXTRA_CFLAGS" qemu-build)
  # Not part of an outer make's jobserver: at most 2 jobs of its own.
  env -u MAKEFLAGS -u MFLAGS -u MAKEOVERRIDES "${QT_BUILD_CMD[@]}" >"$QT_OUT/build.log" 2>&1
}

# qt_runner PAGESIZE [R] (after qt_load): QT_RUN, the prefix that runs a
# guest binary at that page size (empty when NATIVE); with R, under
# `-R $T_RESERVED_VA` too, the guest address space the target's libFuzzer
# runs use (README.md, "Known QEMU bugs": -R brings a bug of its own).
# The guest's environment gets VIGIL_ORACLE_GLIBC_MAX=1 GiB: QEMU 7.2 zeroes
# a brk that grows back over its old extent, all of it (README.md, "Known
# QEMU bugs"): 2.3 s and 1 GiB of RSS per GiB.  glibc (the sysroot's, the
# oracle's other side in these static builds) serves big blocks from brk
# when an input raises M_MMAP_THRESHOLD, so the oracle runs requests over
# 1 GiB on vigil's side alone (diff/oracle.c).  Not for the libFuzzer
# builds, whose glibc side is ASan's allocator, nor natively.
qt_runner() {
  if [ -n "$NATIVE" ]; then QT_RUN=()
  else QT_RUN=("$T_QEMU" ${2:+-R "$T_RESERVED_VA"} -L "$T_SYSROOT" -p "$1" -E VIGIL_ORACLE_GLIBC_MAX=1073741824); fi
}

# The aarch64 libFuzzer build (qemu.mk's qemu-fuzz section), shared by
# fuzz.sh and fuzz/triage.sh.
QT_LF_PACKAGES="clang libclang-rt-14-dev:arm64 libstdc++-12-dev-arm64-cross"
# qt_lf_missing (after qt_load aarch64): QT_LF_MISSING, what the libFuzzer
# build needs and does not find (empty when everything is there).
qt_lf_missing() {
  local rt l
  QT_LF_MISSING=()
  rt=$(clang -print-runtime-dir 2>/dev/null)
  command -v clang >/dev/null || QT_LF_MISSING+=(clang)
  for l in fuzzer asan ubsan_standalone; do
    [ -e "$rt/libclang_rt.$l-aarch64.a" ] || QT_LF_MISSING+=("$rt/libclang_rt.$l-aarch64.a")
  done
  ls "$T_SYSROOT"/lib/libstdc++.so* /usr/lib/gcc-cross/aarch64-linux-gnu/*/libstdc++.so >/dev/null 2>&1 ||
    QT_LF_MISSING+=("libstdc++ for aarch64")
}
# qt_lf_runner (after qt_load aarch64): QT_LF_RUN, the prefix that runs a
# libFuzzer binary, $BUILD/qemu-fuzz/build-aarch64/bin/<target>.
#   -R: a 39-bit guest address space, the layout ASan picks from the guest's
#   stack address; without it QEMU maps above 2^39 and ASan stops with
#   "CHECK failed: asan_poisoning.cpp:36".
#   LD_LIBRARY_PATH=/lib (the sysroot's, through -L): once arm64 is a dpkg
#   architecture (libclang-rt-14-dev:arm64 brings libc6:arm64), the guest's
#   loader finds the host's /lib/aarch64-linux-gnu/libc.so.6 through
#   /etc/ld.so.cache, a different glibc build from the sysroot's ld.so, and
#   pthread_create hangs.
# Give libFuzzer -rss_limit_mb=0 too: its RSS thread hangs the start-up under
# QEMU.
qt_lf_runner() {
  QT_LF_RUN=("$T_QEMU" -R "$T_RESERVED_VA" -L "$T_SYSROOT" -E LD_LIBRARY_PATH=/lib)
}
