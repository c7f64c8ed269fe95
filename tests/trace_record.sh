#!/usr/bin/env bash
# The trace recorder (fuzz/trace/rec.c) on tests/trace_workload.c: three
# threads, 20 forks while they run, forks from signal handlers (some of them
# inside a malloc).  The
# recording must finish (no deadlock: a 60 s timeout), every call must be in
# the trace exactly once (counts per size, per thread and per process), no
# record may cross into another process's file, and the converted programs
# must replay clean through the oracle.  The checker is shown to be real: a
# copy of the trace with one record taken out must fail it.
set -euo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/libvigil-trace.so" fuzz-replay-build >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -fno-builtin -pthread -o "$work/workload" tests/trace_workload.c  # no builtins: gcc drops free(malloc(n))
mkdir "$work/t"
out=$(timeout 60 env VIGIL_TRACE="$work/t/w" LD_PRELOAD="$(realpath "$BUILD/libvigil-trace.so")" "$work/workload") || {
  echo "FAIL: the workload under the recorder: exit $? (124: a deadlock), output: $out"; exit 1; }

timer_forks=$(echo "$out" | sed -n 's/^timer_forks=//p')
check() {
  TIMER_FORKS=$timer_forks python3 - "$1" <<'PY'
import collections, glob, importlib.util, os, sys
tf = int(os.environ["TIMER_FORKS"])
spec = importlib.util.spec_from_file_location("t2o", "fuzz/trace/trace2ops.py")
t2o = importlib.util.module_from_spec(spec); spec.loader.exec_module(t2o)
files = sorted(glob.glob(sys.argv[1] + "/w.*"))
procs = {f: t2o.read_trace(f)[0] for f in files}
bad = [f for f in files if t2o.read_trace(f)[1]]
errors = []
def want(what, got, n):
    if got != n: errors.append(f"{what}: {got}, want {n}")
want(f"trace files (1 parent, 25 + {tf} children)", len(files), 26 + tf)
want("files with bad records", len(bad), 0)
parents = [f for f, r in procs.items() if any(x[1] == t2o.FORK for x in r)]
want("files with fork records (the parent)", len(parents), 1)
if parents:
    r = procs[parents[0]]
    ops = collections.Counter((x[1], x[5]) for x in r)
    want("fork records", ops[(t2o.FORK, 0)], 25 + tf)
    for t in range(3):
        want(f"malloc({1000 + t})", ops[(t2o.MALLOC, 1000 + t)], 1000)
    want("calloc(3, 333)", sum(1 for x in r if x[1] == t2o.CALLOC and x[5] == 333 and x[6] == 3), 10)
    for op, size in [(t2o.MEMALIGN, 640), (t2o.POSIX_MEMALIGN, 650), (t2o.ALIGNED_ALLOC, 660), (t2o.MALLOC, 555)]:
        want(f"op {op} of {size}", ops[(op, size)], 5)
    want("reallocs", sum(ops[(t2o.REALLOC, 700 + 1300 * i)] for i in range(1, 6)), 5)
    want("usable-size calls", sum(1 for x in r if x[1] == t2o.USABLE), 5)
    want("malloc(4321) in the parent", ops[(t2o.MALLOC, 4321)], 0)
    threads = {x[2] for x in r if x[1] == t2o.MALLOC and 1000 <= x[5] <= 1002}
    main = {x[2] for x in r if x[1] == t2o.CALLOC}
    want("threads making malloc(1000..1002)", len(threads), 3)
    want("of them, the main thread", len(threads & main), 0)
    live = set()
    for x in r:  # every malloc(1000..1002) is freed, in sequence order
        if x[1] == t2o.MALLOC and 1000 <= x[5] <= 1002: live.add(x[4])
        elif x[1] == t2o.FREE: live.discard(x[3])
    want("malloc(1000..1002) blocks never freed", len(live), 0)
kids = [r for f, r in procs.items() if f not in parents]
want("children with 7 malloc(4321) and 7 frees",
     sum(1 for r in kids if sum(x[1] == t2o.MALLOC and x[5] == 4321 for x in r) == 7
         and sum(x[1] == t2o.FREE for x in r) >= 7), 20)
want("parent records in a child's file", sum(1 for r in kids for x in r if x[1] == t2o.MALLOC and 1000 <= x[5] <= 1002), 0)
if errors:
    print("\n".join(errors)); sys.exit(1)
print(f"{len(files)} trace files, every call counted")
PY
}
check "$work/t" || { echo "FAIL: the trace misses or invents calls (above)"; exit 1; }

# The checker is real: one malloc(1001) record taken out of the parent's trace.
mkdir "$work/cut"
cp "$work"/t/w.* "$work/cut/"
python3 - "$work/cut" <<'PY'
import glob, struct, sys
REC = struct.Struct("<QBBB5xQQQQ")
for f in glob.glob(sys.argv[1] + "/w.*"):
    d = bytearray(open(f, "rb").read())
    for off in range(16, len(d) - REC.size + 1, REC.size):
        rec = REC.unpack_from(d, off)
        if rec[1] == 1 and rec[6] == 1001:
            del d[off:off + REC.size]
            open(f, "wb").write(d)
            sys.exit(0)
sys.exit("no malloc(1001) record to take out")
PY
if cut=$(check "$work/cut"); then echo "FAIL: the checker passed a trace with a record taken out"; exit 1; fi
echo "$cut" | grep -q "malloc(1001): 999, want 1000" || { echo "FAIL: the cut trace failed for another reason: $cut"; exit 1; }

# The converted programs replay clean.
python3 fuzz/trace/trace2ops.py --name workload --out "$work/corpus" --ops 200 "$work"/t/w.* >/dev/null
for target in api threads options; do
  "$BUILD/fuzz/replay/$target" -q -n 2 "$work/corpus/$target" >/dev/null 2>"$work/err" || {
    echo "FAIL: replay of the converted $target programs:"; tail -5 "$work/err"; exit 1; }
done
echo "trace_record: the recorder kept every call of 3 threads and $((25 + timer_forks)) forks ($timer_forks from a timer inside mallocs); the converted programs replay clean"
