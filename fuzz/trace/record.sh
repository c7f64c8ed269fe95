#!/usr/bin/env bash
# make traces: records the malloc-family calls of four real programs with
# build/libvigil-trace.so (fuzz/trace/rec.c) and converts each trace into
# seeds for the api, threads and options targets (fuzz/trace/trace2ops.py):
# corpus/<target>/trace-<name>-<k>.ops.  Each workload is fixed (hash seeds,
# dates and data are pinned), so a re-recording gives the same calls up to
# what the programs themselves vary.  corpus/NOTES lists the results.
set -euo pipefail
BUILD=${BUILD:-build}
REC=$(realpath "$BUILD/libvigil-trace.so")
ROOT=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for tool in /usr/bin/python3 git sqlite3 gcc; do
  command -v "$tool" >/dev/null || { echo "record.sh: $tool is missing (ci/deps.sh traces installs it)" >&2; exit 1; }
done

# record NAME SOURCE COMMAND...: runs COMMAND under the recorder in $work/run.
record() {
  local name=$1 source=$2
  shift 2
  mkdir -p "$work/$name" "$work/run"
  (cd "$work/run" && VIGIL_TRACE="$work/$name/t" LD_PRELOAD="$REC" "$@" >/dev/null)
  python3 "$ROOT/fuzz/trace/trace2ops.py" --name "$name" --source "$source" --out "$ROOT/corpus" "$work/$name"/t.*
}

# python3: dicts, JSON, regular expressions and three threads making bytearrays.
record python3 "python3 -c: JSON round trip, re.findall and 3 threads (PYTHONHASHSEED=0)" \
  env PYTHONHASHSEED=0 /usr/bin/python3 -c '
import json, re, threading
d = {str(i): list(range(i % 50)) for i in range(3000)}
s = json.dumps(d)
assert json.loads(s) == d
n = len(re.findall(r"\d+", s))
def work(k):
    keep = [bytearray((i * 37 + k) % 5000) for i in range(1500)]
    del keep[::2]
ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
print(n)'

# git: a repository of 40 files, committed twice, then log, diff and status.
git_work() {
  export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
  git init -q repo && cd repo
  git config user.name vigil && git config user.email vigil@example.invalid
  for i in $(seq 40); do seq "$i" $((i * 40)) >"f$i.txt"; done
  git add . && git commit -qm one
  for i in $(seq 1 3 40); do echo "change $i" >>"f$i.txt"; done
  git commit -qam two
  git log --stat >/dev/null && git diff HEAD~1 >/dev/null && git status --porcelain >/dev/null
}
mkdir -p "$work/git" "$work/run"
(cd "$work/run" && export VIGIL_TRACE="$work/git/t" LD_PRELOAD="$REC" && git_work)
python3 "$ROOT/fuzz/trace/trace2ops.py" --name git --out "$ROOT/corpus" \
  --source "git init, add, 2 commits of 40 files, log --stat, diff, status (the largest of its processes)" \
  "$work/git"/t.*

# sqlite3: a table of 20,000 rows with text of 0-199 bytes, an index, a join.
record sqlite3 "sqlite3 :memory: with 20,000 rows, an index, an aggregate and a self-join" \
  sqlite3 :memory: "create table t(a integer, b text);
with recursive c(x) as (select 1 union all select x + 1 from c limit 20000)
insert into t select x, substr(printf('%0200d', x), 1, x % 200) from c;
create index i on t(b);
select count(*), sum(length(b)) from t;
select count(*) from t as p join t as q on p.a = q.a + 1 where length(p.b) > 100;"

# gcc: compiles fuzz/program.c with -O2 (the trace kept is cc1's, the largest).
record gcc "gcc -O2 -c fuzz/program.c (cc1, the largest of its processes)" \
  gcc -O2 -I"$ROOT/fuzz" -I"$ROOT/src" -c "$ROOT/fuzz/program.c" -o "$work/program.o"
