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
  - the floor: what the inputs' forks, threads, page faults and fills and
    checks cost at the least on this machine (bench/fuzz_floor.c: a fork
    the parent waits for, a thread it joins, a fault on a fresh page, a KiB
    memset and compared in memory already mapped), per input on average
    (corrupt's own fork per input included), threads, faults and memory
    work shared among the cores where the program has threads.  The faults
    are the ones the replay driver took (getrusage of its process and
    children, less its start): memory the program touched that was not
    mapped in yet, which its fills and callocs write and the kernel zeroes
    first.  The bytes are the ones the oracle's fills wrote and its checks
    compared in the replay process (replay -b);
  - the harness: the replay driver on one empty input, repeated: what the
    target costs an input without a program.
Writes bench/results/fuzz.md (or --out) and prints it.  A benchmark, never a
test: nothing here fails on a slow number.

  python3 bench/fuzz_bench.py [--runs N] [--seconds S] [--no-libfuzzer]
                              [--out FILE] [--keep DIR] [TARGET...]

--keep DIR keeps each libFuzzer run's work in DIR/<target>: its working
corpus is DIR/<t>/libfuzzer/<t>/corpus, and the replay driver without -q
gives each input's time, so that `build/fuzz/replay/<t> DIR/<t>/libfuzzer/
<t>/corpus | sort -k5 -g | tail` names the inputs that cost most.
"""
import argparse
import datetime
import os
import platform
import re
import resource
import shutil
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
# The targets whose programs run their spawn and fork ops (fuzz/<t>.c's
# allow_threads, allow_fork); elsewhere those ops run inline.
SPAWNS = {"threads", "fork"}
FORKS = {"fork"}


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


def count_ops(lines, n_inputs, word):
    """Lines of the text form that are this op, per input on average."""
    total = sum(1 for line in lines if line.strip().split(" ", 1)[0] == word)
    return total / n_inputs if n_inputs else 0.0


def text_of_binaries(t, folder):
    """The text form of a folder of binary inputs (vigil-ops print, the one
    decoder), and how many there are."""
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    if not files:
        return [], 0
    r = subprocess.run([os.path.join(B, "vigil-ops"), "print", "--target", t] + files,
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{t}: vigil-ops print failed on {folder}:\n{r.stderr}")
    return r.stdout.splitlines(), len(files)


def floor_us(t, fl, lines, n_inputs, faults, kib):
    """The floor of an input on average, and its forks and threads.  A
    fork's wait is the program's alone; threads, faults and the fills' and
    checks' memory work (kib: KiB filled and checked an input, model_bytes)
    can spread over the machine's cores where the program has threads (the
    spawned ones run beside main), so that part is shared out among them."""
    forks = (count_ops(lines, n_inputs, "fork") if t in FORKS else 0.0) + (t == "corrupt")
    spawns = count_ops(lines, n_inputs, "spawn") if t in SPAWNS else 0.0
    cores = min(os.cpu_count() or 1, 1 + spawns)
    memory_ns = kib[0] * fl["fill_ns_kib"] + kib[1] * fl["check_ns_kib"]
    us = forks * fl["fork_wait_us"] + (spawns * fl["thread_us"] + (faults * fl["fault_ns"] + memory_ns) / 1000) / cores
    return us, forks, spawns


def model_bytes(t, folder, n_inputs):
    """KiB the programs' fills wrote and their checks compared, an input on
    average (replay -b, one pass, untimed).  Only the replay process's own:
    the fork target's children and corrupt's cases count theirs apart, so
    there the floor is lower than the work."""
    r = subprocess.run([os.path.join(B, "fuzz/replay", t), "-q", "-b", folder], capture_output=True, text=True)
    m = re.search(r"model bytes: filled=(\d+) checked=(\d+)", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"{t}: the replay driver -b failed on {folder}:\n{r.stdout}{r.stderr}")
    return int(m.group(1)) / 1024 / n_inputs, int(m.group(2)) / 1024 / n_inputs


def floor():
    exe = os.path.join(B, "bench/fuzz_floor")
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", out)}


def child_faults():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt


def replay_rate(t, seeds, n_inputs, runs, inputs="the seeds"):
    """Median executions per second of the replay driver over a folder of
    inputs, and its page faults per input (of the run the median came
    from); RuntimeError if it fails on one."""
    exe = os.path.join(B, "fuzz/replay", t)
    per_run = t in SPAWNS  # -n repeats each input in one process

    def run(cmd):
        f0, t0 = child_faults(), time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        dt, faults = time.monotonic() - t0, child_faults() - f0
        if r.returncode != 0:
            raise RuntimeError(f"{t}: the replay driver failed on {inputs}:\n{r.stdout}{r.stderr}")
        return dt, faults

    empty = tempfile.mkdtemp(prefix="vigil-fuzz-bench-empty.")
    try:
        start = min(run([exe, "-q", empty])[1] for _ in range(3))  # the driver's own start
    finally:
        shutil.rmtree(empty, ignore_errors=True)

    def once(reps):
        dt, faults = run([exe, "-q"] + (["-n", str(reps), seeds] if per_run else [seeds] * reps))
        return dt, (n_inputs * reps / dt, max(faults - start, 0) / (n_inputs * reps))

    return grown_median(once, runs, 1, 1.0, 100000)


def grown_median(once, runs, reps, least, most):
    """once(reps) runs something reps times and returns (seconds, result);
    reps grows from `reps` until a run lasts `least` seconds (or reaches
    `most`), and the median result of `runs` more runs at that count comes
    back (results compare by their first item)."""
    dt, _ = once(reps)
    while dt < least and reps < most:
        reps = max(reps * 2, int(reps * least * 1.2 / max(dt, 1e-3)))
        dt, _ = once(reps)
    results = sorted(once(reps)[1] for _ in range(runs))
    return results[len(results) // 2]


def harness_us(t, runs):
    """The target's own cost per input, without a program: the replay driver
    run on one empty input (-n), per input, the median of `runs` runs.  What
    an input costs beyond it is its program's work: its ops, the forks,
    threads and faults they make, the oracle's comparisons."""
    exe = os.path.join(B, "fuzz/replay", t)
    d = tempfile.mkdtemp(prefix="vigil-fuzz-bench-harness.")
    try:
        path = os.path.join(d, "empty")
        open(path, "wb").close()

        def timed(reps):
            t0 = time.monotonic()
            r = subprocess.run([exe, "-q", "-n", str(reps), path], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{t}: the replay driver failed on an empty input:\n{r.stdout}{r.stderr}")
            return time.monotonic() - t0

        start = min(timed(1) for _ in range(3))  # the driver's own start, and one input

        def once(reps):
            dt = timed(reps)
            return dt, max(dt - start, 0) * 1e6 / reps

        return grown_median(once, runs, 1000, 0.5, 10**7)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def libfuzzer(t, seconds, runs, fl, keep_in=None):
    """libFuzzer's execs/s, cov and result, and the replay driver's rate,
    its floor (floor_us) and the input count over the corpus it kept (None
    where it found nothing).  keep_in: a folder where the run's work (its
    working corpus, logs, findings) is made and kept, as keep_in/<t>."""
    if keep_in:
        work = os.path.join(keep_in, t)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix="vigil-fuzz-bench.")
    keep = bool(keep_in)
    try:
        env = dict(os.environ, BUILD=BUILD)
        r = subprocess.run(["bash", "fuzz/run.sh", "-e", "libfuzzer", "-s", str(seconds), "-w", work, t],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 9 and f[0] == t and f[1] == "libfuzzer":
                kept = os.path.join(work, "libfuzzer", t, "corpus")
                n = len(os.listdir(kept)) if os.path.isdir(kept) else 0
                rate = wfloor = None
                if f[8] != "ok":  # a finding: its summary, and the folder with the input
                    keep = True
                    tail = r.stdout[r.stdout.find("fuzz summary"):] if "fuzz summary" in r.stdout else r.stdout[-2000:]
                    print(f"fuzz-bench: {t}: libFuzzer ended '{' '.join(f[8:])}'; kept {work}\n{tail}", file=sys.stderr)
                try:
                    if n and f[8] == "ok":
                        rate, faults = replay_rate(t, kept, n, runs, "libFuzzer's working corpus")
                        lines, n_text = text_of_binaries(t, kept)
                        kib = model_bytes(t, kept, n)
                        wfloor = floor_us(t, fl, lines, n_text, faults, kib) + (faults, sum(kib))
                except RuntimeError as e:
                    print(f"fuzz-bench: {e}", file=sys.stderr)
                return f[4], f[5], " ".join(f[8:]), rate, n, wfloor
        return "-", "-", f"no summary (exit {r.returncode})", None, 0, None
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--no-libfuzzer", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/fuzz.md"))
    ap.add_argument("--keep", metavar="DIR", help="make and keep each libFuzzer run's work in DIR/<target>")
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    if a.runs < 1 or a.seconds < 1:
        die("--runs and --seconds want a positive number")
    known = targets_from_make()
    targets = a.targets or known
    for t in targets:
        if t not in known:
            die(f"unknown target {t} (known: {' '.join(known)})")
    need = ["bench/fuzz_floor", "vigil-ops"] + [f"fuzz/replay/{t}" for t in targets]
    if not a.no_libfuzzer:
        need += [f"fuzz/libfuzzer/{t}" for t in targets]
    missing = [x for x in need if not os.access(os.path.join(B, x), os.X_OK)]
    if missing:
        die(f"not built in {B}: {' '.join(missing)} (make fuzz-bench builds them first)")

    fl = floor()
    rows = []
    for t in targets:
        seeds = tempfile.mkdtemp(prefix=f"vigil-fuzz-bench-{t}.")
        try:
            r = subprocess.run([os.path.join(B, "fuzz/replay", t), "-q", "-A", seeds] + seed_dirs(t),
                               capture_output=True, text=True)
            if r.returncode != 0:
                die(f"{t}: cannot assemble the seeds:\n{r.stderr}")
            n = len(os.listdir(seeds))
            try:
                rate, faults = replay_rate(t, seeds, n, a.runs)
                kib = model_bytes(t, seeds, n)
                h_us = harness_us(t, a.runs)
            except RuntimeError as e:
                die(str(e))
            fl_us, forks, spawns = floor_us(t, fl, *text_of_binaries(t, seeds), faults, kib)
        finally:
            shutil.rmtree(seeds, ignore_errors=True)
        eps, cov, res, wrate, wn, wfloor = (("-", "-", "not run", None, 0, None) if a.no_libfuzzer
                                            else libfuzzer(t, a.seconds, a.runs, fl,
                                                           a.keep and os.path.abspath(a.keep)))
        rows.append((t, n, rate, eps, cov, res, forks, spawns, faults, sum(kib), fl_us, h_us, wrate, wn, wfloor))
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
        f"a system call {fl['syscall_ns']:.0f} ns, a page fault on a fresh page {fl['fault_ns'] / 1000:.1f} µs, "
        f"a fill {fl['fill_ns_kib']:.0f} ns and a check {fl['check_ns_kib']:.0f} ns a KiB of mapped memory",
        f"- replay: the replay driver (no sanitizer) over each target's seeds, median of {a.runs} runs; "
        f"libFuzzer + ASan: `fuzz/run.sh -e libfuzzer -s {a.seconds}` from the seeds alone; "
        f"working corpus: the replay driver over the corpus that libFuzzer run kept, median of {a.runs} runs; "
        f"harness: the replay driver on one empty input, repeated (-n), per input, median of {a.runs} runs: "
        "the target's own cost, without a program (fork's includes its noise threads running beside it; "
        "corrupt's empty input runs no case)",
        "",
        "| target | seeds | replay execs/s (per input) | floor per input (forks, threads, page faults, KiB filled and checked an input) | harness per input | "
        f"libFuzzer+ASan execs/s | cov after {a.seconds} s | working corpus: inputs, replay execs/s (per input) | "
        "working corpus: floor per input (forks, threads, faults, KiB) | goal (replay / libFuzzer) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t, n, rate, eps, cov, res, forks, spawns, faults, kib, fl_us, h_us, wrate, wn, wfloor in rows:
        g = GOALS.get(t, (None, None))
        goal = " / ".join(f"{x:,}" if x else "-" for x in g)
        lf = eps if res == "ok" or eps == "-" else f"{eps} ({res})"
        work = f"{wn}, {wrate:,.0f} ({1e6 / wrate:,.0f} µs)" if wrate else "-"
        wfl = f"{wfloor[0]:,.0f} µs ({wfloor[1]:.1f}, {wfloor[2]:.1f}, {wfloor[3]:,.0f}, {wfloor[4]:,.0f})" if wfloor else "-"
        lines.append(f"| {t} | {n} | {rate:,.0f} ({1e6 / rate:,.0f} µs) "
                     f"| {fl_us:,.0f} µs ({forks:.1f}, {spawns:.1f}, {faults:,.0f}, {kib:,.0f}) | {h_us:,.1f} µs "
                     f"| {lf} | {cov} | {work} | {wfl} | {goal} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    print(f"wrote {os.path.relpath(a.out, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
