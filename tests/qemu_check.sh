#!/usr/bin/env bash
# The QEMU matrix on all six targets: aarch64 (4, 16 and 64 KiB pages),
# ppc64le (64 KiB), s390x (big-endian), riscv64, i686 and armhf (32-bit):
# cross-built unit, seed and stress tests and the corpus replay through the
# oracle, under qemu-user (qemu-targets/README.md).  Fails, naming the Debian
# packages, when a cross compiler, its libc or qemu-user is missing.
set -u
cd "$(dirname "$0")/.." || exit 1
exec make -s --no-print-directory BUILD="${BUILD:-build}" qemu-check ARCHES="aarch64 ppc64le s390x riscv64 i686 armhf"
