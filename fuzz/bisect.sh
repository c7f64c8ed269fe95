#!/usr/bin/env bash
# Finds the commit that introduced a failure: `git bisect run` over GOOD..BAD
# (BAD defaults to HEAD), where a commit is bad when INPUT fails on it.
# `make triage` prints the command line for the variant that reproduced.
#
#   fuzz/bisect.sh -t TARGET [-v release|asan|ubsan|tsan] [-a ARCH [-p PAGESIZE]]
#                  [-r RUNS] INPUT GOOD [BAD]
#   -v  host build (default release: the commit's own `make
#       build/fuzz/replay/TARGET`; a sanitizer build is compiled with clang
#       from the commit's sources)
#   -a  the QEMU target instead (qemu-targets/ARCH and qemu.mk of *this*
#       tree, applied to each commit's sources); -p its page size (default:
#       the target's first)
#   -r  runs per commit (default 3); a commit is bad if any run fails
# It works in a temporary `git worktree`, so the checkout, its build folder and
# the user's own bisect (if any) are untouched.  A commit that does not build
# or cannot read the input is skipped (exit 125 to git bisect).
# Exit: 0 when git bisect named a first bad commit, 1 when it could not, 2 on
# a usage error.
set -uo pipefail
CALLER_PWD=$PWD
ROOT=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel 2>/dev/null) || {
  echo "bisect: not in a git checkout" >&2; exit 2; }
cd "$ROOT" || exit 2
usage() { sed -n '/^#   fuzz\/bisect.sh/,/^#   -r/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

target="" variant=release arch="" ps="" runs=3
while getopts "t:v:a:p:r:h" o; do
  case $o in
    t) target=$OPTARG ;; v) variant=$OPTARG ;; a) arch=$OPTARG ;; p) ps=$OPTARG ;; r) runs=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
input=$1 good=$2 bad=${3:-HEAD}
[[ $input == /* ]] || [ -e "$input" ] || input=$CALLER_PWD/$input
[ -n "$target" ] || { echo "bisect: -t TARGET is required" >&2; exit 2; }
[ -f "fuzz/$target.c" ] || { echo "bisect: no fuzz/$target.c" >&2; exit 2; }
[ -f "$input" ] || { echo "bisect: INPUT '$input' is not a file" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bisect: -r RUNS must be a positive number" >&2; exit 2; }
case $variant in release | asan | ubsan | tsan) ;; *) echo "bisect: unknown variant '$variant'" >&2; exit 2 ;; esac
for c in "$good" "$bad"; do
  git rev-parse --verify -q "$c^{commit}" >/dev/null || { echo "bisect: '$c' is not a commit" >&2; exit 2; }
done
good=$(git rev-parse "$good^{commit}") bad=$(git rev-parse "$bad^{commit}")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vigil-bisect.XXXXXX")
wt=$tmp/wt
mkdir -p "$tmp/build"
cleanup() {
  git -C "$wt" bisect reset >/dev/null 2>&1
  git worktree remove --force "$wt" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
# The input in binary form (.ops assembled by this tree's replay driver).
case $input in
  *.ops) make -s --no-print-directory "build/fuzz/replay/$target" >/dev/null &&
           "build/fuzz/replay/$target" -q -A "$tmp/asm" "$input" >/dev/null || {
           echo "bisect: $input does not assemble" >&2; exit 2; }
         cp "$(find "$tmp/asm" -type f | head -n1)" "$tmp/input" ;;
  *) cp "$input" "$tmp/input" ;;
esac
run=()
if [ -n "$arch" ]; then
  QT_WHO=bisect
  . qemu-targets/lib.sh
  qt_load "$arch" && qt_tools "$arch" || exit 2
  ps=${ps:-${T_PAGESIZES%% *}}
  cp qemu-targets/qemu.mk "$tmp/qemu.mk"
  qt_runner "$ps"
  run=("${QT_RUN[@]}")
  what="$arch at page size $ps"
else
  what="the host's $variant build"
fi

# The step git bisect runs, at each commit, inside the worktree.
cat >"$tmp/step.sh" <<EOF
#!/usr/bin/env bash
set -u
B=$tmp/build/\$(git rev-parse --short HEAD)
target=$target variant=$variant arch='$arch'
if [ -n "\$arch" ]; then
  env -u MAKEFLAGS make -s -j2 -f $tmp/qemu.mk BUILD=\$B QEMU_BUILD_ARCH=$arch $(printf '%q ' "QEMU_CC=${T_CC:-}" \
    "QEMU_TRIPLE=${T_TRIPLE:-}" "QEMU_EXTRA_CFLAGS=${T_EXTRA_CFLAGS:-}") "\$B/qemu/$arch/replay/\$target" >\$B.log 2>&1 || exit 125
  bin=\$B/qemu/$arch/replay/\$target
elif [ "\$variant" = release ]; then
  env -u MAKEFLAGS make -s BUILD=\$B "\$B/fuzz/replay/\$target" >\$B.log 2>&1 || exit 125
  bin=\$B/fuzz/replay/\$target
else
  case \$variant in asan) san=address ;; ubsan) san="undefined -fno-sanitize-recover=undefined" ;; tsan) san=thread ;; esac
  mkdir -p \$B
  clang -std=gnu11 -O1 -g -pthread -fsanitize=\$san -DVIGIL_PREFIX -DVIGIL_NO_SDT -Isrc -Ifuzz -Idiff \\
    -o \$B/replay src/*.c fuzz/\$target.c fuzz/replay.c fuzz/program.c diff/*.c >\$B.log 2>&1 || exit 125
  bin=\$B/replay
fi
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:exitcode=66:report_signal_unsafe=0
for i in \$(seq $runs); do
  { timeout -k 5 120 $(printf '%q ' "${run[@]}")"\$bin" -q $tmp/input >\$B.run.log 2>&1; } 2>/dev/null
  rc=\$?
  [ \$rc -eq 2 ] && exit 125   # the commit's driver cannot read the input
  [ \$rc -ne 0 ] && exit 1
done
exit 0
EOF
chmod +x "$tmp/step.sh"

git worktree add -q --detach "$wt" "$bad" || exit 2
echo "bisect: $target, $what, $runs runs a commit, ${good:0:12}..${bad:0:12}"
git -C "$wt" bisect start "$bad" "$good" >"$tmp/start.log" 2>&1 || { echo "bisect: git bisect start failed" >&2; exit 1; }
(cd "$wt" && git bisect run "$tmp/step.sh") >"$tmp/bisect.log" 2>&1
first=$(sed -n 's/^\([0-9a-f]\{40\}\) is the first bad commit$/\1/p' "$tmp/bisect.log")
if [ -z "$first" ]; then
  echo "bisect: git bisect named no first bad commit; its log:"
  tail -n 20 "$tmp/bisect.log"
  exit 1
fi
echo "first bad commit: $(git log -1 --format='%h %s' "$first")"
exit 0
