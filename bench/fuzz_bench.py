#!/usr/bin/env python3
"""make fuzz-bench: the fuzz targets' throughput, in executions per second.

For each target (FUZZ_TARGETS):
  - replay: the replay driver (no sanitizer) over the target's seeds
    (corpus/<t> and corpus/regressions/<t>, assembled to binary once),
    repeated until a run lasts about a second; the median of --runs runs;
  - libFuzzer + ASan: fuzz/run.sh for --seconds from the seeds alone (a
    fresh working folder), its execs/s and libFuzzer's cov at the end;
  - the working corpus: the replay driver, as above, over the corpus that
    libFuzzer run kept (the seeds that add coverage and what it found):
    what a fuzzer's inputs cost, rather than the seeds' hand-made ones;
  - the floor: what the seeds' forks and threads cost at the least on this
    machine (bench/fuzz_floor.c: a fork the parent waits for, a thread it
    joins), per input on average (corrupt's own fork per input included).
Writes bench/results/fuzz.md (or --out) and prints it.  A benchmark, never a
test: nothing here fails on a slow number.

  python3 bench/fuzz_bench.py [--runs N] [--seconds S] [--no-libfuzzer]
                              [--out FILE] [TARGET...]
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
B = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
# What issue 11 asks of each target, in the replay driver and under libFuzzer+ASan.
GOALS = {"api": (10000, None), "options": (10000, None), "edge": (10000, None),
         "threads": (1000, 300), "fork": (1000, 300), "corrupt": (2000, None)}


def die(msg):
    print(f"fuzz-bench: {msg}", file=sys.stderr)
    sys.exit(2)


def targets_from_make():
    with open(os.path.join(ROOT, "fuzz/fuzz.mk")) as f:
        for line in f:
            m = re.match(r"FUZZ_TARGETS\s*:=\s*(.*)", line)
            if m:
                return m.group(1).split()
    die("no FUZZ_TARGETS in fuzz/fuzz.mk")


def seed_dirs(t):
    return [d for d in (os.path.join(ROOT, "corpus", t), os.path.join(ROOT, "corpus/regressions", t))
            if os.path.isdir(d)]


def ops_files(t):
    out = []
    for d in seed_dirs(t):
        out += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".ops")]
    return out


def count_ops(files, word):
    """Lines of the text form that are this op, per input on average."""
    total = 0
    for f in files:
        with open(f) as fh:
            total += sum(1 for line in fh if line.strip().split(" ", 1)[0] == word)
    return total / len(files) if files else 0.0


def floor():
    exe = os.path.join(B, "bench/fuzz_floor")
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", out)}


def replay_rate(t, seeds, n_inputs, runs, inputs="the seeds"):
    """Median executions per second of the replay driver over a folder of
    inputs; RuntimeError if it fails on one."""
    exe = os.path.join(B, "fuzz/replay", t)
    per_run = t in ("threads", "fork")  # -n repeats each input in one process

    def once(reps):
        cmd = [exe, "-q"] + (["-n", str(reps), seeds] if per_run else [seeds] * reps)
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError(f"{t}: the replay driver failed on {inputs}:\n{r.stdout}{r.stderr}")
        return n_inputs * reps / dt, dt

    reps = 1
    rate, dt = once(reps)
    while dt < 1.0 and reps < 100000:
        reps = max(reps * 2, int(reps * 1.2 / max(dt, 1e-3)))
        rate, dt = once(reps)
    return statistics.median([rate] + [once(reps)[0] for _ in range(runs - 1)])


def libfuzzer(t, seconds, runs):
    """libFuzzer's execs/s, cov and result, and the replay driver's rate
    and input count over the corpus it kept (None where it found nothing)."""
    work = tempfile.mkdtemp(prefix="vigil-fuzz-bench.")
    keep = False
    try:
        env = dict(os.environ, BUILD=BUILD)
        r = subprocess.run(["bash", "fuzz/run.sh", "-e", "libfuzzer", "-s", str(seconds), "-w", work, t],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 9 and f[0] == t and f[1] == "libfuzzer":
                kept = os.path.join(work, "libfuzzer", t, "corpus")
                n = len(os.listdir(kept)) if os.path.isdir(kept) else 0
                rate = None
                if f[8] != "ok":  # a finding: its summary, and the folder with the input
                    keep = True
                    tail = r.stdout[r.stdout.find("fuzz summary"):] if "fuzz summary" in r.stdout else r.stdout[-2000:]
                    print(f"fuzz-bench: {t}: libFuzzer ended '{' '.join(f[8:])}'; kept {work}\n{tail}", file=sys.stderr)
                try:
                    if n and f[8] == "ok":
                        rate = replay_rate(t, kept, n, runs, "libFuzzer's working corpus")
                except RuntimeError as e:
                    print(f"fuzz-bench: {e}", file=sys.stderr)
                return f[4], f[5], " ".join(f[8:]), rate, n
        return "-", "-", f"no summary (exit {r.returncode})", None, 0
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--no-libfuzzer", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/fuzz.md"))
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    if a.runs < 1 or a.seconds < 1:
        die("--runs and --seconds want a positive number")
    known = targets_from_make()
    targets = a.targets or known
    for t in targets:
        if t not in known:
            die(f"unknown target {t} (known: {' '.join(known)})")

    fl = floor()
    rows = []
    for t in targets:
        files = ops_files(t)
        seeds = tempfile.mkdtemp(prefix=f"vigil-fuzz-bench-{t}.")
        try:
            r = subprocess.run([os.path.join(B, "fuzz/replay", t), "-q", "-A", seeds] + seed_dirs(t),
                               capture_output=True, text=True)
            if r.returncode != 0:
                die(f"{t}: cannot assemble the seeds:\n{r.stderr}")
            n = len(os.listdir(seeds))
            try:
                rate = replay_rate(t, seeds, n, a.runs)
            except RuntimeError as e:
                die(str(e))
        finally:
            shutil.rmtree(seeds, ignore_errors=True)
        # corrupt runs each input in a forked child of its own.
        forks, spawns = count_ops(files, "fork") + (t == "corrupt"), count_ops(files, "spawn")
        fl_us = forks * fl["fork_wait_us"] + spawns * fl["thread_us"]
        eps, cov, res, wrate, wn = ("-", "-", "not run", None, 0) if a.no_libfuzzer else libfuzzer(t, a.seconds, a.runs)
        rows.append((t, n, rate, eps, cov, res, forks, spawns, fl_us, wrate, wn))
        print(f"fuzz-bench: {t}: replay {rate:,.0f}/s over {n} seeds"
              f"{f', {wrate:,.0f}/s over {wn} inputs of the working corpus' if wrate else ''}; "
              f"libFuzzer+ASan {eps}/s, cov {cov} ({res})", file=sys.stderr)

    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    lines = [
        "# vigil fuzz targets: executions per second",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.machine()}, nproc {os.cpu_count()}, Linux {platform.release()}",
        f"- vigil: {git.stdout.strip() or 'unknown'}",
        f"- floor on this machine (bench/fuzz_floor.c, medians of 301): a fork the parent waits for "
        f"{fl['fork_wait_us']:.0f} µs, a thread created and joined {fl['thread_us']:.0f} µs, "
        f"a system call {fl['syscall_ns']:.0f} ns",
        f"- replay: the replay driver (no sanitizer) over each target's seeds, median of {a.runs} runs; "
        f"libFuzzer + ASan: `fuzz/run.sh -e libfuzzer -s {a.seconds}` from the seeds alone; "
        f"working corpus: the replay driver over the corpus that libFuzzer run kept, median of {a.runs} runs",
        "",
        "| target | seeds | replay execs/s (per input) | floor per input (forks, threads a seed) | "
        f"libFuzzer+ASan execs/s | cov after {a.seconds} s | working corpus: inputs, replay execs/s | "
        "goal (replay / libFuzzer) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t, n, rate, eps, cov, res, forks, spawns, fl_us, wrate, wn in rows:
        g = GOALS.get(t, (None, None))
        goal = " / ".join(f"{x:,}" if x else "-" for x in g)
        lf = eps if res == "ok" or eps == "-" else f"{eps} ({res})"
        work = f"{wn}, {wrate:,.0f} ({1e6 / wrate:,.0f} µs)" if wrate else "-"
        lines.append(f"| {t} | {n} | {rate:,.0f} ({1e6 / rate:,.0f} µs) | {fl_us:,.0f} µs ({forks:.1f}, {spawns:.1f}) "
                     f"| {lf} | {cov} | {work} | {goal} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    print(f"wrote {os.path.relpath(a.out, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
