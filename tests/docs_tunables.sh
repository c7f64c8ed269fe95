#!/usr/bin/env bash
# README.md's tunables table must be exactly what $BUILD/tests/tunables_table
# prints from src/options.def (the only list of vigil's knobs).  The table
# sits between these two lines of README.md:
#   <!-- tunables:begin -->
#   <!-- tunables:end -->
# A missing README or missing markers is a failure, not a skip.
#
#   tests/docs_tunables.sh            check (prints a unified diff on mismatch)
#   tests/docs_tunables.sh --update   rewrite the section from the program
# Exit: 0 pass (or updated), 1 fail.
set -euo pipefail
BUILD=${BUILD:-build}
readme=README.md
begin='<!-- tunables:begin -->'
end='<!-- tunables:end -->'
mode=check
case "${1:-}" in
  "") ;;
  --update) mode=update ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

gen=$BUILD/tests/tunables_table
[ -x "$gen" ] || { echo "FAIL: $gen not found (run make tests)"; exit 1; }
[ -f "$readme" ] || { echo "FAIL: $readme does not exist; it must hold the tunables table between '$begin' and '$end' (then run $0 --update)"; exit 1; }
nb=$(grep -cxF "$begin" "$readme" || true)
ne=$(grep -cxF "$end" "$readme" || true)
lb=$(grep -nxF "$begin" "$readme" | cut -d: -f1 | head -1 || true)
le=$(grep -nxF "$end" "$readme" | cut -d: -f1 | head -1 || true)
if [ "$nb" != 1 ] || [ "$ne" != 1 ] || [ "$lb" -ge "$le" ]; then
  echo "FAIL: $readme must contain the line '$begin' once, followed later by '$end' once (found $nb and $ne);"
  echo "      add them where the tunables table belongs, then run $0 --update"
  exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/vigil-docs.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$gen" >"$T/expected" || { echo "FAIL: $gen exited with status $?"; exit 1; }
[ -s "$T/expected" ] || { echo "FAIL: $gen printed nothing"; exit 1; }
awk -v a="$lb" -v b="$le" 'NR > a && NR < b' "$readme" >"$T/actual"

if [ "$mode" = update ]; then
  { head -n "$lb" "$readme"; cat "$T/expected"; tail -n "+$le" "$readme"; } >"$T/new"
  if cmp -s "$T/new" "$readme"; then echo "$readme: tunables table already up to date"
  else cat "$T/new" >"$readme"; echo "$readme: tunables table rewritten ($(wc -l <"$T/expected") lines)"; fi
  exit 0
fi

if ! diff -u --label "$readme (between the markers, lines $lb-$le)" --label "$gen" "$T/actual" "$T/expected"; then
  echo "FAIL: $readme's tunables table differs from src/options.def (fix: bash $0 --update)"
  exit 1
fi
echo "PASS: $readme's tunables table matches $gen ($(($(wc -l <"$T/expected") - 2)) tunables)"
