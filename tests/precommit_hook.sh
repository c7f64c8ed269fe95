#!/usr/bin/env bash
# Issue 9: the pre-commit hook (ci/pre-commit, `make install-hooks`), in a
# scratch clone of this tree:
#   1. --plan maps staged paths to the fuzz targets they can affect;
#   2. a clean commit (README only) passes: built, replayed, nothing to fuzz;
#   3. a commit to fuzz/edge.c fuzzes edge (a fixed 300 inputs from a fixed
#      seed, VIGIL_FUZZ_RUNS) and passes;
#   4. VIGIL_SKIP_FUZZ=1 says it skips fuzzing and what it would have fuzzed;
#   5. a commit that plants fuzz/mutants/usable-minus-16.patch is blocked,
#      with the reproducing command, and HEAD does not move;
#   6. a commit that changes a line a mutant's hunk holds is blocked by the
#      mutant check, which names the patch.
set -u -o pipefail
ROOT=$(pwd)
S=$(mktemp -d "${TMPDIR:-/tmp}/vigil-hook-test.XXXXXX")
trap 'rm -rf "$S"' EXIT
fail() { echo "FAIL: $*"; [ -f "$S/out" ] && tail -20 "$S/out" | sed 's/^/  | /'; exit 1; }

git clone -q "$ROOT" "$S/repo" || fail "git clone"
cd "$S/repo" || exit 1
# The working tree's hook and make rule, in case they are not committed yet.
cp "$ROOT/ci/pre-commit" ci/pre-commit
cp "$ROOT/Makefile" Makefile
cp "$ROOT/fuzz/run.sh" fuzz/run.sh
git config user.email hook-test@vigil.invalid
git config user.name "hook test"
git commit -qam "test setup" --no-verify --allow-empty || fail "setup commit"
make -s install-hooks >/dev/null || fail "make install-hooks"
[ -x "$(git rev-parse --git-path hooks)/pre-commit" ] || fail "no pre-commit hook installed"

# 1. The plan.
plan_is() { # WANT PATH...: stage a change to each PATH, check the plan, unstage
  local want=$1 got
  shift
  for f in "$@"; do mkdir -p "$(dirname "$f")"; echo "/* hook test */" >>"$f"; git add "$f"; done
  got=$(bash ci/pre-commit --plan)
  git reset -q --hard
  git clean -qfd corpus
  [ "$got" = "$want" ] || fail "plan for $*: '$got', want '$want'"
  echo "ok plan: $* -> ${want:-(none)}"
}
all=$(sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)
plan_is "" README.md
plan_is "" tests/unit_core.c bench/workloads.c
plan_is "fork" src/fork.c
plan_is "api edge" fuzz/edge.c corpus/api/hook-test.ops
plan_is "options" src/options.def
plan_is "$all" src/internal.h
plan_is "$all" fuzz/program.c

# 2. A clean commit passes.
echo "hook test" >>README.md
git add README.md
git commit -qm "clean: README only" >"$S/out" 2>&1 || fail "a clean commit was blocked"
grep -q "no fuzz target is affected" "$S/out" || fail "the clean commit's hook did not say why it fuzzed nothing"
grep -q "vigil pre-commit: passed in" "$S/out" || fail "no 'passed in' line"
grep -q "replaying the corpus and the regressions took" "$S/out" || fail "no timing of the replay"
echo "ok clean commit passes: $(grep 'passed in' "$S/out")"

# 3. A change to a fuzz target fuzzes it, for a fixed number of inputs.
echo "/* hook test */" >>fuzz/edge.c
git add fuzz/edge.c
VIGIL_FUZZ_RUNS=300 VIGIL_FUZZ_SECONDS=5 git commit -qm "edge: a comment" >"$S/out" 2>&1 ||
  fail "a commit to fuzz/edge.c was blocked"
grep -q "fuzzing edge for 5 s each" "$S/out" || fail "the hook did not fuzz edge"
grep -q "fuzzing edge .* took" "$S/out" || fail "no timing of the fuzzing"
echo "ok fuzz/edge.c change fuzzes edge"

# 4. VIGIL_SKIP_FUZZ=1.
echo "/* hook test */" >>src/stats.c
git add src/stats.c
VIGIL_SKIP_FUZZ=1 git commit -qm "stats: a comment" >"$S/out" 2>&1 || fail "a VIGIL_SKIP_FUZZ=1 commit was blocked"
grep -q "fuzzing skipped (VIGIL_SKIP_FUZZ=1; it would have fuzzed: api edge)" "$S/out" ||
  fail "VIGIL_SKIP_FUZZ=1: the hook did not say it skipped fuzzing"
echo "ok VIGIL_SKIP_FUZZ=1 is announced"

# 5. A mutant is blocked.
head=$(git rev-parse HEAD)
patch -s -p1 <fuzz/mutants/usable-minus-16.patch || fail "the mutant does not apply"
git add -A src
if VIGIL_FUZZ_SECONDS=5 git commit -qm "plant usable-minus-16" >"$S/out" 2>&1; then fail "the mutant commit was not blocked"; fi
[ "$(git rev-parse HEAD)" = "$head" ] || fail "HEAD moved"
grep -q "the corpus replay FAILED; the commit is blocked" "$S/out" || fail "no 'blocked' message naming the step"
grep -q "reproduce:" "$S/out" || fail "no reproducing command"
grep -q "usable size" "$S/out" || fail "the oracle's finding is not shown"
echo "ok the usable-minus-16 mutant is blocked:"
grep -E "FAILED|reproduce:|usable size" "$S/out" | head -3 | sed 's/^/  | /'
# 6. A change that breaks a mutant's patch is blocked, naming the patch
# (realloc-always-moves removes the lines around this comment).
git reset -q --hard # case 5's mutant out
head=$(git rev-parse HEAD)
grep -q 'fits, and wastes at most half' src/api.c || fail "src/api.c no longer has the line this case edits"
sed -i 's|fits, and wastes at most half|fits and wastes at most half|' src/api.c
git add src/api.c
if VIGIL_SKIP_FUZZ=1 git commit -qm "api: a comment the mutant's hunk holds" >"$S/out" 2>&1; then
  fail "a commit that breaks fuzz/mutants/realloc-always-moves.patch was not blocked"
fi
[ "$(git rev-parse HEAD)" = "$head" ] || fail "HEAD moved"
grep -q "the mutant check FAILED; the commit is blocked" "$S/out" || fail "no 'blocked' message naming the mutant check"
grep -q "no longer apply to the staged tree: realloc-always-moves.patch$" "$S/out" ||
  fail "the message does not name realloc-always-moves.patch alone"
git checkout -q HEAD -- src/api.c
echo "ok a change that breaks a mutant's patch is blocked:"
grep -E "FAILED|no longer apply" "$S/out" | head -2 | sed 's/^/  | /'
echo "precommit_hook: all checks passed"
