#!/usr/bin/env bash
# Proof that the replay driver's mutation mode (replay -M, what `make
# qemu-fuzz` runs on the QEMU targets without libFuzzer) finds bugs the
# corpus does not: the mutant fuzz/mutants/signed-shrink.patch is built in a
# copy of the tree (as fuzz/selftest.sh does), and the api seeds that the
# mutant passes are kept (from a fixed list of seeds).  From those alone, a bounded mutation run (fixed
# seed, at most RUNS executions or SECONDS) must crash, save the input, and
# that file must fail again on the mutant, with the same report (the
# oracle's, or vigil's own when its checks catch the mutant first), and
# pass on the real tree.  The real tree's same bounded run must find nothing.
# Host build only, no QEMU.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CC=${CC:-gcc}
MUTANT=signed-shrink SEED=1 RUNS=5000 SECONDS_MAX=20
work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-qfm.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

make -s BUILD="$BUILD" CC="$CC" "$BUILD/fuzz/replay/api" >/dev/null || fail "host replay build"
real=$BUILD/fuzz/replay/api
mkdir -p "$work/tree"
tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$work/tree"
(cd "$work/tree" && patch -s -p1 <"fuzz/mutants/$MUTANT.patch") || fail "$MUTANT.patch does not apply"
make -C "$work/tree" -s BUILD=build CC="$CC" build/fuzz/replay/api >"$work/build.log" 2>&1 ||
  { tail -20 "$work/build.log"; fail "mutant build"; }
mutant=$work/tree/build/fuzz/replay/api

# The seeds that do not find the mutant by themselves, from a fixed list:
# with the whole of corpus/api, every seed added there changed the
# mutations and so what the bounded run found first (with the trace seeds,
# a SIGSEGV without a report).
SEEDS="calloc-zero cost-span-lengths cost-span-loop extremes free-empty memalign-family page-boundaries
  realloc-chain reallocarray size-classes usable-trim-tune cost-realloc-cycles mmap-threshold"
mkdir -p "$work/seeds"
killers=()
for s in $SEEDS; do
  f=corpus/api/$s.ops
  [ -f "$f" ] || fail "seed $f is gone: update SEEDS"
  if "$mutant" -q "$f" >/dev/null 2>&1; then cp "$f" "$work/seeds/"; else killers+=("$(basename "$f")"); fi
done
kept=$(ls "$work/seeds" | wc -l)
echo "seeds: $kept kept; the mutant is found by the corpus through ${killers[*]:-nothing} only"
[ "$kept" -gt 0 ] || fail "every seed finds the mutant: nothing to prove"
"$mutant" -q "$work/seeds" >/dev/null 2>&1 || fail "the kept seeds fail on the mutant"
"$real" -q "$work/seeds" >/dev/null 2>&1 || fail "the kept seeds fail on the real tree"

# Mutation on the mutant: must crash and save the input.
"$mutant" -q -M $SECONDS_MAX -s $SEED -r $RUNS -o "$work/crashes" "$work/seeds" >"$work/mutant.log" 2>&1
rc=$?
grep -E '^mutate:|^replay:|^vigil' "$work/mutant.log" | head -5
[ $rc -ne 0 ] || fail "the mutation run found nothing on the mutant (exit 0)"
saved=$(sed -n 's/^replay: input saved to //p' "$work/mutant.log")
[ -n "$saved" ] && [ -s "$saved" ] || fail "no saved input (exit $rc)"
# The report without addresses (they differ from run to run): the oracle's,
# or vigil's own when its checks catch what the mutant broke first (which
# one comes first depends on the seeds the mutations start from).
oracle_says() { grep -m1 -E '^vigil oracle|^vigil: ' "$1" | sed 's/0x[0-9a-f]*/ADDR/g'; }
why=$(oracle_says "$work/mutant.log")
[ -n "$why" ] || fail "the mutant run died without a report from the oracle or vigil (exit $rc)"

# The saved file alone: fails on the mutant the same way, passes on the real tree.
"$mutant" "$saved" >"$work/again.log" 2>&1 && fail "$saved passes on the mutant when replayed alone"
[ "$(oracle_says "$work/again.log")" = "$why" ] || fail "the replay failed differently: $(oracle_says "$work/again.log")"
"$real" -q "$saved" >/dev/null 2>&1 || fail "$saved fails on the real tree too: not the mutant's bug"
echo "saved $(basename "$saved") replays to: $why"

# The same bounded run on the real tree finds nothing.
"$real" -q -M $SECONDS_MAX -s $SEED -r $RUNS -o "$work/crashes-real" "$work/seeds" >"$work/real.log" 2>&1 ||
  { tail -5 "$work/real.log"; fail "the real tree's mutation run crashed"; }
grep '^mutate: .* no crash$' "$work/real.log" || fail "no final line from the real tree's run"
echo "qemu_fuzz_mutate: the mutation mode finds $MUTANT from seeds that miss it; the real tree passes"
