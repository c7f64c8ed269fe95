#!/usr/bin/env python3
"""Turn traces of fuzz/trace/rec.c into op programs (fuzz/FORMAT.md, text form).

    trace2ops.py --name git-status --out corpus TRACE_FILE...

Each TRACE_FILE is one process's trace (PREFIX.<pid>).  Its records are
sorted by sequence number (duplicates from the exit flush dropped) and cut
into windows of --ops calls; --programs windows, spread evenly over the
trace, become inputs for each target:

  api       every thread's calls in one stream, as the main thread;
  threads   the first four threads of the window each run their own calls
            (one spawned sub-program per thread, joined at the end); a
            single-threaded window is cut into four consecutive parts;
  options   the api program behind a VIGIL_OPTIONS string (OPTION_STRINGS).

A program has 16 slots per thread (PROG_SLOTS / PROG_THREADS), so a window's
live blocks are mapped onto them least recently used first: a block that
does not fit is freed early (a `free` the program did not make).  A free,
realloc or usable-size call of a block the window never saw (made before the
window, evicted, or owned by another thread of the threads program) is left
out, except a realloc, which becomes a malloc of its new size.  Every block
is filled after it is made and checked before it is freed, so the oracle
sees its contents.  The output files are
OUT/<target>/trace-<name>-<k>.ops, each with a header comment that names
the trace and the records it came from.
"""
import argparse
import os
import struct
import sys

MAGIC = 0x3145434152544756
REC = struct.Struct("<QBBB5xQQQQ")
HDR = struct.Struct("<QII")
CHECK = 0xA5
(MALLOC, FREE, CALLOC, REALLOC, REALLOCARRAY, MEMALIGN, ALIGNED_ALLOC,
 POSIX_MEMALIGN, VALLOC, PVALLOC, USABLE, TRIM, FORK) = range(1, 14)
ALLOCS = {MALLOC: "malloc", CALLOC: "calloc", MEMALIGN: "memalign",
          ALIGNED_ALLOC: "aligned_alloc", POSIX_MEMALIGN: "posix_memalign",
          VALLOC: "valloc", PVALLOC: "pvalloc"}
SLOTS_PER_THREAD = 16
THREADS = 4
SPAWN_MAX = 64  # ops in one spawn (fuzz/FORMAT.md)
FILL_MAX = 1 << 20  # blocks above this are not filled: the oracle's time goes on the calls
OPTION_STRINGS = ["", "mmap_threshold=65536", "trim_threshold=0,decay_ms=0", "arena_max=1"]


def die(msg):
    print("trace2ops: " + msg, file=sys.stderr)
    sys.exit(1)


def read_trace(path):
    """The records of one trace file in sequence order, and how many were bad."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if len(data) < HDR.size:
        die(f"{path}: not a vigil trace (shorter than its header)")
    magic, rec_size, _pid = HDR.unpack_from(data, 0)
    if magic != MAGIC or rec_size != REC.size:
        die(f"{path}: not a vigil trace (bad magic or record size {rec_size})")
    recs, bad, seen = [], 0, set()
    for off in range(HDR.size, len(data) - REC.size + 1, REC.size):
        seq, op, thread, check, ptr, ret, size, arg = REC.unpack_from(data, off)
        if check != CHECK or not 1 <= op <= FORK:
            bad += 1
            continue
        if seq in seen:
            continue
        seen.add(seq)
        recs.append((seq, op, thread, ptr, ret, size, arg))
    recs.sort()
    if (len(data) - HDR.size) % REC.size:
        bad += 1
    return recs, bad


class Stream:
    """One program thread's ops, with its 16 slots."""

    def __init__(self, thread):
        self.base = SLOTS_PER_THREAD * thread
        self.ops = []
        self.where = {}  # address -> slot
        self.slot_of_use = {}  # slot -> last use (LRU)
        self.clock = 0

    def touch(self, s):
        self.clock += 1
        self.slot_of_use[s] = self.clock

    def take_slot(self):
        for s in range(self.base, self.base + SLOTS_PER_THREAD):
            if s not in self.slot_of_use:
                self.touch(s)
                return s
        s = min(self.slot_of_use, key=self.slot_of_use.get)
        for addr, t in list(self.where.items()):
            if t == s:
                del self.where[addr]
        self.ops.append(f"check slot={s}")
        self.ops.append(f"free slot={s}")
        self.touch(s)
        return s

    def release(self, s):
        self.slot_of_use.pop(s, None)

    def filled(self, s, size, seq):
        if 0 < size <= FILL_MAX:
            self.ops.append(f"fill slot={s} byte={1 + seq % 255}")

    def call(self, rec):
        seq, op, _thread, ptr, ret, size, arg = rec
        if op in ALLOCS:
            s = self.take_slot()
            name = ALLOCS[op]
            if op == CALLOC:
                self.ops.append(f"calloc slot={s} nmemb={arg} size={size}")
                size = size * arg
            elif op in (MEMALIGN, ALIGNED_ALLOC, POSIX_MEMALIGN):
                self.ops.append(f"{name} slot={s} align={arg} size={size}")
            else:
                self.ops.append(f"{name} slot={s} size={size}")
            if ret:
                self.where.pop(ret, None)
                self.where[ret] = s
                self.filled(s, size, seq)
            else:
                self.release(s)
        elif op == FREE:
            s = self.where.pop(ptr, None)
            if s is not None:
                self.ops.append(f"check slot={s}")
                self.ops.append(f"free slot={s}")
                self.release(s)
        elif op in (REALLOC, REALLOCARRAY):
            s = self.where.pop(ptr, None) if ptr else None
            new = s is None
            if new:
                s = self.take_slot()
            if op == REALLOC:
                self.ops.append(f"{'malloc' if new and ptr else 'realloc'} slot={s} size={size}")
            else:
                self.ops.append(f"{'calloc' if new and ptr else 'reallocarray'} slot={s} nmemb={arg} size={size}")
            total = size * (arg if op == REALLOCARRAY else 1)
            if ret:
                self.where.pop(ret, None)
                self.where[ret] = s
                self.touch(s)
                if new:
                    self.filled(s, total, seq)
                else:
                    self.ops.append(f"check slot={s}")
            elif total == 0 and not new:
                self.release(s)  # realloc(p, 0) freed it
            elif not new:
                self.where[ptr] = s  # a failed realloc keeps the block
            else:
                self.release(s)
        elif op == USABLE:
            s = self.where.get(ptr)
            if s is not None:
                self.ops.append(f"usable slot={s}")
        elif op == TRIM:
            self.ops.append(f"trim pad={size}")


def api_program(window):
    st = Stream(0)
    for rec in window:
        st.call(rec)
    return st.ops


def threads_program(window):
    ids = []
    for rec in window:
        if rec[2] not in ids:
            ids.append(rec[2])
    if len(ids) >= 2:
        parts = [[r for r in window if r[2] == t] for t in ids[:THREADS]]
    else:
        k = (len(window) + THREADS - 1) // THREADS
        parts = [window[i:i + k] for i in range(0, len(window), k)]
    streams = []
    for t, part in enumerate(parts):
        st = Stream(t)
        for rec in part:
            st.call(rec)
        streams.append(st)
    # A spawned sub-program holds at most SPAWN_MAX ops, so the threads run
    # in rounds: each spawns with its next part, main runs its next part,
    # and all are joined (the slots keep their blocks across rounds).
    chunks = [[st.ops[i:i + SPAWN_MAX] for i in range(0, len(st.ops), SPAWN_MAX)] for st in streams]
    out = []
    for r in range(max(len(c) for c in chunks)):
        spawned = [t for t in range(1, len(chunks)) if r < len(chunks[t])]
        for t in spawned:
            out.append(f"spawn thread={t} ops={len(chunks[t][r])}")
            out.extend("  " + o for o in chunks[t][r])
        if r < len(chunks[0]):
            out.extend(chunks[0][r])
        out.extend(f"join thread={t}" for t in spawned)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True, help="the trace's name in the output files")
    ap.add_argument("--out", required=True, help="the corpus folder (OUT/<target>/ is written)")
    ap.add_argument("--ops", type=int, default=300, help="calls per window (default 300)")
    ap.add_argument("--programs", type=int, default=3, help="windows per trace and target (default 3)")
    ap.add_argument("--source", default="", help="how the trace was made, for the header comment")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    if a.ops < 1 or a.programs < 1:
        die("--ops and --programs must be at least 1")
    recs, bad = [], 0
    for path in a.traces:  # the largest process trace: the others are short-lived helpers
        r, b = read_trace(path)
        bad += b
        if len(r) > len(recs):
            recs = r
    calls = [r for r in recs if r[1] != FORK]
    if not calls:
        die("no malloc-family call in " + " ".join(a.traces))
    nwin = max(1, min(a.programs, len(calls) // a.ops))
    step = max(1, (len(calls) - a.ops) // max(1, nwin - 1)) if nwin > 1 else 0
    written = 0
    used = set()
    for k in range(nwin):
        lo = min(k * step, max(0, len(calls) - a.ops))
        # A window of frees of blocks made before it (a program's teardown)
        # converts to almost nothing: move it back until it makes a program.
        for _ in range(40):
            if lo not in used and len(api_program(calls[lo:lo + a.ops])) >= a.ops // 3:
                break
            lo = max(0, lo - a.ops // 2)
        used.add(lo)
        window = calls[lo:lo + a.ops]
        head = [f"# Recorded with fuzz/trace/rec.c: {a.source or a.name}",
                f"# (calls {lo}..{lo + len(window) - 1} of {len(calls)}; converted by fuzz/trace/trace2ops.py)"]
        progs = {"api": api_program(window), "threads": threads_program(window)}
        opt = OPTION_STRINGS[k % len(OPTION_STRINGS)]
        progs["options"] = [f"# VIGIL_OPTIONS: '{opt}'",
                            "bytes " + " ".join(str(x) for x in [len(opt)] + list(opt.encode()))] + progs["api"]
        for target, ops in progs.items():
            d = os.path.join(a.out, target)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"trace-{a.name}-{k}.ops"), "w") as f:
                f.write("\n".join(head + ops) + "\n")
            written += 1
    note = f", {bad} bad records skipped" if bad else ""
    print(f"trace2ops: {a.name}: {len(calls)} calls, {nwin} windows of {a.ops}, {written} programs{note}")


if __name__ == "__main__":
    main()
