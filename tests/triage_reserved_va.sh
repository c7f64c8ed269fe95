#!/usr/bin/env bash
# `make triage` on a failure that only QEMU's -R (reserved_va) shows must say
# "emulator suspected (QEMU reserved_va, see qemu-targets/README.md)", not
# blame vigil or the architecture.
#
# The case is the one CI met (issue 8, item 7): vigil grew a large block with
# a bare mremap(MREMAP_MAYMOVE), the grow to 125 GiB was refused, vigil kept
# the block, and under qemu-aarch64 -R (512 GiB) the refused mremap had
# already put QEMU's PROT_NONE reservation over it, so the next check read a
# SIGSEGV.  The mutant below puts that grow back in front of whatever
# vg_large_realloc does now, in a throw-away copy of the tree (never the real
# src/), and the input is the one libFuzzer found.  On aarch64 (all three
# page sizes) and the host the input must pass; under -R, in the static
# replay build and in the libFuzzer (ASan) build, it must fail.  About 60 s
# from nothing built.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
log=$ROOT/$BUILD/tests/triage_reserved_va
rm -rf "$log" && mkdir -p "$log"
for tool in qemu-aarch64 aarch64-linux-gnu-gcc clang gdb-multiarch; do
  command -v $tool >/dev/null || {
    echo "skipped: $tool not found (bash ci/deps.sh qemu-fuzz and ci/deps.sh triage install what this needs)"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-triage-rv.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$work"
cd "$work" || exit 1
# The mutant: src/large.c's vg_large_realloc becomes vg_large_realloc_real
# (one line: the hunk's context may have moved on, so it applies with fuzz),
# and a new file defines vg_large_realloc as a bare MREMAP_MAYMOVE grow
# first, then the real one.
patch -s -p1 -F1 --no-backup-if-mismatch >"$log/patch.log" 2>&1 <<'EOF' || { cat "$log/patch.log"; echo "FAIL: the mutant does not apply to src/large.c"; exit 1; }
--- a/src/large.c
+++ b/src/large.c
@@ -187,3 +187,3 @@
  * NULL when the caller should fall back to allocate-copy-free. */
-void *vg_large_realloc(void *p, size_t size) {
+void *vg_large_realloc_real(void *p, size_t size) {
   size_t ps = vg_os_page_size();
--- /dev/null
+++ b/src/mutant_bare_maymove.c
@@ -0,0 +1,23 @@
+/* A mutant (tests/triage_reserved_va.sh): a large block's grow tries a bare
+ * mremap(MREMAP_MAYMOVE) first.  Refused, realloc falls back to
+ * allocate-copy and the block stays where it was; granted, the pages go
+ * back to their old place and size, and the real vg_large_realloc runs.
+ * Natively that is only slower; under qemu-user -R, a refused bare
+ * MREMAP_MAYMOVE has unmapped the block (qemu-targets/README.md). */
+#define _GNU_SOURCE
+#include <sys/mman.h>
+
+#include "internal.h"
+
+void *vg_large_realloc_real(void *p, size_t size);
+
+void *vg_large_realloc(void *p, size_t size) {
+  size_t ps = vg_os_page_size(), have = vg_large_usable(p);
+  if (have != 0 && size > have && size <= PTRDIFF_MAX - 4 * ps) {
+    size_t want = (size + ps - 1) / ps * ps;
+    void *q = mremap(p, have, want, MREMAP_MAYMOVE);
+    if (q == MAP_FAILED) return NULL;
+    if (mremap(q, want, have, MREMAP_MAYMOVE | MREMAP_FIXED, p) == MAP_FAILED) __builtin_trap();
+  }
+  return vg_large_realloc_real(p, size);
+}
EOF
grep -q '^void \*vg_large_realloc_real(void \*p, size_t size) {$' src/large.c ||
  { echo "FAIL: the mutant did not rename vg_large_realloc in src/large.c"; exit 1; }
cat >reserved-va-grow.ops <<'EOF'
# libFuzzer, aarch64, api, 55 executions (issue 8, item 7)
malloc slot=0 size=74
fill slot=0 byte=90
realloc slot=0 size=2031616
check slot=0
realloc slot=0 size=134972964865
check slot=0
EOF

out=$log/triage.log
env -u MAKEFLAGS make -s --no-print-directory triage INPUT=reserved-va-grow.ops TARGET=api ARCHES=aarch64 \
  VARIANTS=release RUNS=1 MINIMIZE=0 >"$out" 2>&1 || bad "make triage exited $?"
grep -qE '^host release +0/1 +pass' "$out" || bad "the host should pass"
for ps in 4 16 64; do
  grep -qE "^aarch64 p${ps}k +0/1 +pass" "$out" || bad "aarch64 at ${ps} KiB pages (no -R) should pass"
done
grep -qE '^aarch64 -R p4k +1/1 +SIGSEGV' "$out" || bad "the static build under -R should die of SIGSEGV"
grep -qE '^aarch64 -R libFuzzer +1/1 +exit 1: .*ERROR: AddressSanitizer: SEGV' "$out" ||
  bad "the libFuzzer build under -R should stop on ASan's SEGV"
grep -qF 'classification: emulator suspected (QEMU reserved_va, see qemu-targets/README.md)' "$out" ||
  bad "not classified as emulator suspected"
grep -qE '^classification: .*(architecture-only|page-size-only|everywhere)' "$out" &&
  bad "classified as vigil's or the architecture's too"
grep -qE '^reference: aarch64 -R p4k: SIGSEGV' "$out" || bad "the reference should be the static build under -R"
# The read is model_verify's memcmp (frame 0, libc's, then first_other).
rv=$(sed -n 's/^RESERVED_VA=//p' qemu-targets/aarch64)
grep -A12 "^stack (gdb-multiarch on qemu-aarch64 -R $rv -g" "$out" | grep -qE '#[0-2] .*model_verify .* at diff/model\.c:[0-9]+' ||
  bad "no gdb-multiarch stack under -R ending in the oracle's read of the block (model_verify, within its top 3 frames)"
grep -q '^no bisect command: only qemu -R reproduces it' "$out" || bad "a bisect command without -R was offered"

if [ $fail -ne 0 ]; then
  echo "--- make triage output:"; cat "$out"
  exit 1
fi
sed -n '/^where /,/^$/p' "$out"
echo "triage_reserved_va: $(grep -m1 '^classification' "$out" | cut -c1-110)..."
