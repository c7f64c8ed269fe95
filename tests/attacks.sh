#!/usr/bin/env bash
# The attack suite: every program in tests/attacks/ (one misuse each), for
# each size range it applies to, with vigil preloaded and on plain glibc.
# An outcome is one of
#   abort: MESSAGE       the allocator stopped it (vigil's message without the
#                        address; glibc's last line)
#   fault                SIGSEGV or SIGBUS outside the allocator (a guard page
#                        or an unmapped block doing its job)
#   crash in vigil       SIGSEGV or SIGBUS with the faulting instruction in
#                        libvigil.so: always a failure
#   hang                 no end within 20 s: always a failure under vigil
#   primitive: WHAT      it survived with an overlapping, duplicate or
#                        attacker-chosen block
#   survived             it survived, unnoticed, with no primitive
# Each case runs under vigil at every hardening level (VIGIL_OPTIONS=harden=N,
# N in LEVELS) and under glibc.  vigil's outcomes must be exactly those in
# tests/attacks/expected (so a defence that stops working, or starts
# working, shows); glibc's are recorded there too and only reported when
# they differ.  A primitive at any level is a failure.  README.md holds
# the table (between <!-- attacks:begin --> and <!-- attacks:end -->),
# generated from the expected file and checked here.
#
#   tests/attacks.sh              check
#   tests/attacks.sh --update     rewrite tests/attacks/expected and README's table from this run
#   ATTACKS='regex' tests/attacks.sh   only the programs whose name matches
set -uo pipefail
LEVELS=(0 1 2 3)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
mode=check
case "${1:-}" in
  "") ;;
  --update) mode=update ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac
expected=tests/attacks/expected
readme=README.md
begin='<!-- attacks:begin -->' end='<!-- attacks:end -->'

make -s --no-print-directory BUILD="$BUILD" "$BUILD/libvigil.so" >/dev/null || { echo "FAIL: cannot build $BUILD/libvigil.so"; exit 1; }
lib=$(realpath "$BUILD/libvigil.so")
bin=$BUILD/attacks
mkdir -p "$bin"
T=$(mktemp -d "${TMPDIR:-/tmp}/vigil-attacks.XXXXXX")
trap 'rm -rf "$T"' EXIT
ulimit -c 0

progs=()
for src in tests/attacks/*.c; do
  name=$(basename "$src" .c)
  [[ $name =~ ${ATTACKS:-.} ]] || continue
  if [ ! -x "$bin/$name" ] || [ "$src" -nt "$bin/$name" ] || [ tests/attacks/attack.h -nt "$bin/$name" ]; then
    gcc -std=gnu11 -O1 -g -fno-builtin -pthread -Wall -Wextra -o "$bin/$name" "$src" -ldl ||
      { echo "FAIL: $src does not build"; exit 1; }
  fi
  progs+=("$name")
done
[ ${#progs[@]} -gt 0 ] || { echo "FAIL: no attack program matches '${ATTACKS:-.}'"; exit 1; }

# outcome PROG RANGE [LD_PRELOAD [LEVEL]]: one line, as above.
outcome() {
  local prog=$1 range=$2 pre=${3:-} level=${4:-0} rc sig line
  env -u LD_PRELOAD -u VIGIL_OPTIONS ${pre:+LD_PRELOAD=$pre VIGIL_OPTIONS=harden=$level} \
    timeout 20 "$bin/$prog" "$range" >"$T/out" 2>"$T/err"
  rc=$?
  if [ $rc -eq 124 ]; then echo hang; return; fi
  if [ $rc -gt 128 ]; then
    sig=$(kill -l $((rc - 128)) 2>/dev/null)
    case $sig in
      SEGV | BUS)
        if grep -q '^attack: SIG.* in libvigil' "$T/err"; then echo "crash in vigil"; else echo fault; fi ;;
      ABRT)
        line=$(grep -m1 -oE '^vigil: .* at 0x' "$T/err" | sed -E 's/^vigil: //; s/ at 0x$//')
        [ -n "$line" ] || line=$(grep -v '^attack:' "$T/err" | grep -v '^$' | tail -1 | sed -E 's/0x[0-9a-f]+/0x?/g' | cut -c1-70)
        echo "abort: ${line:-no message}" ;;
      *) echo "signal $sig" ;;
    esac
    return
  fi
  case $rc in
    0) grep -qx survived "$T/out" && echo survived || echo "exit 0 without a verdict" ;;
    3) grep -m1 '^primitive: ' "$T/out" || echo "primitive: ?" ;;
    *) echo "exit $rc: $(head -c 200 "$T/err")" ;;
  esac
}

: >"$T/got"
for prog in "${progs[@]}"; do
  for range in $("$bin/$prog" ranges); do
    line="$prog"$'\t'"$range"
    for level in "${LEVELS[@]}"; do line+=$'\t'$(outcome "$prog" "$range" "$lib" "$level"); done
    line+=$'\t'$(outcome "$prog" "$range")
    printf '%s\n' "$line" >>"$T/got"
  done
done

# README's table: a row per program and size range, a column per level
# then glibc; ranges with the same outcomes everywhere share a row.
table() {
  python3 - "$1" "${#LEVELS[@]}" <<'PY'
import sys, collections
nl = int(sys.argv[2])
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if not line or line.startswith("#"): continue
    f = line.split("\t")
    rows.setdefault((f[0], tuple(f[2:])), []).append(f[1])
def short(o, who):
    if o.startswith("abort: "): return o[7:] if who == "vigil" else "abort"
    if o.startswith("primitive"): return "**PRIMITIVE**"
    return o
print("| attack | sizes | " + " | ".join("harden=%d" % i for i in range(nl)) + " | glibc |")
print("|---|---|" + "---|" * (nl + 1))
for (prog, outs), ranges in rows.items():
    cells = [short(o, "vigil") for o in outs[:nl]] + [short(outs[nl], "glibc")]
    print(f"| `{prog}` | {', '.join(ranges)} | " + " | ".join(cells) + " |")
PY
}

if [ $mode = update ]; then
  { echo "# program<TAB>range<TAB>vigil's outcome at harden=${LEVELS[*]}<TAB>glibc's outcome: written by tests/attacks.sh --update"; cat "$T/got"; } >"$expected"
  table "$expected" >"$T/table"
  python3 - "$readme" "$T/table" "$begin" "$end" <<'PY'
import sys
readme, table, b, e = sys.argv[1:]
s = open(readme).read()
i, j = s.index(b + "\n"), s.index(e)
open(readme, "w").write(s[:i + len(b) + 1] + open(table).read() + s[j:])
PY
  echo "attacks: wrote $expected and README.md's table ($(wc -l <"$T/got") cases)"
  exit 0
fi

fail=0
# The crash-in-vigil verdict is real: a store through a bad out-pointer
# given to posix_memalign faults inside the allocator (glibc's too).
cat >"$T/crash.c" <<'EOF'
#include "attack.h"
ATTACK("tiny") {
  (void)n;
  int (*volatile pm)(void **, size_t, size_t) = posix_memalign;
  pm((void **)16, 64, 64);
}
EOF
gcc -std=gnu11 -O1 -Itests/attacks -pthread -o "$bin/selfcheck-crash" "$T/crash.c" -ldl || { echo "FAIL: the self-check does not build"; exit 1; }
v=$(outcome selfcheck-crash tiny "$lib" 0)
[ "$v" = "crash in vigil" ] || { echo "FAIL: a fault inside libvigil.so was classified '$v', not 'crash in vigil'"; fail=1; }
g=$(outcome selfcheck-crash tiny)
[ "$g" = fault ] || { echo "FAIL: a fault inside glibc was classified '$g', not 'fault'"; fail=1; }
[ -f "$expected" ] || { echo "FAIL: $expected is missing (tests/attacks.sh --update writes it)"; exit 1; }
nl=${#LEVELS[@]}
while IFS=$'\t' read -r -a got; do
  prog=${got[0]} range=${got[1]} g=${got[nl + 2]}
  IFS=$'\t' read -r -a want < <(awk -F'\t' -v p="$prog" -v r="$range" '$1 == p && $2 == r' "$expected")
  [ ${#want[@]} -gt 0 ] || { echo "FAIL: $prog $range: not in $expected"; fail=1; continue; }
  for i in "${!LEVELS[@]}"; do
    v=${got[i + 2]} w=${want[i + 2]:-} at="$prog $range harden=${LEVELS[i]}"
    case $v in
      "crash in vigil" | hang | exit* | signal*) echo "FAIL: $at: $v (never allowed)"; fail=1; continue ;;
    esac
    if [ "$v" != "$w" ]; then echo "FAIL: $at: vigil: $v, expected: $w"; fail=1
    elif [[ $v == primitive* ]]; then echo "FAIL: $at: $v (no level may leave one)"; fail=1
    fi
  done
  [ -n "${want[nl + 2]:-}" ] && [ "$g" != "${want[nl + 2]}" ] && echo "note: $prog $range: glibc: $g (recorded: ${want[nl + 2]})"
done <"$T/got"
if [ -z "${ATTACKS:-}" ]; then
  missing=$(grep -v '^#' "$expected" | cut -f1,2 | sort | comm -23 - <(cut -f1,2 "$T/got" | sort))
  [ -z "$missing" ] || { echo "FAIL: in $expected but not run: $missing"; fail=1; }
  table "$expected" >"$T/table"
  sed -n "/^$begin\$/,/^$end\$/p" "$readme" | sed '1d;$d' >"$T/readme-table"
  diff -u "$T/readme-table" "$T/table" >"$T/diff" || { echo "FAIL: README.md's attack table is not $expected's (tests/attacks.sh --update):"; cat "$T/diff"; fail=1; }
fi
n=$(wc -l <"$T/got")
summary="attacks: $n cases;"
for i in "${!LEVELS[@]}"; do
  col=$((i + 3))
  summary+=" harden=${LEVELS[i]} stopped $(cut -f$col "$T/got" | grep -cE '^(abort|fault)'), left $(cut -f$col "$T/got" | grep -c '^primitive') primitive(s);"
done
col=$((nl + 3))
echo "$summary glibc stopped $(cut -f$col "$T/got" | grep -cE '^(abort|fault)'), left $(cut -f$col "$T/got" | grep -c '^primitive')"
exit $fail
