#!/usr/bin/env python3
"""Run vigil's benchmark workloads under several allocators and compare them.

Every workload runs under every allocator in the same invocation, interleaved
round-robin (for run i: for each workload: for each allocator), so slow
drifts of a shared, noisy machine hit all allocators alike. The order of the
allocators rotates by one each run. Reported numbers are medians.

    python3 bench/run.py [--quick] [--check] [--runs N]

Environment: RUNS (runs per workload and allocator; default 5, 3 with
--quick), BUILD (build directory; default build), ALLOCATORS (comma list to
restrict, e.g. glibc,vigil), HARDEN (e.g. 1,2,3: vigil at those levels too,
as vigil-h1...), VIGIL_BASE (another libvigil.so, as vigil-base: an A/B).

Writes bench/results/latest.{md,csv,png} (quick.{md,csv,png} with --quick,
NAME.{md,csv,png} with --name NAME).
Exit status: 0 ok, 1 a run failed (crash, non-zero exit, timeout, missing
output, preload not mapped), 2 usage or setup error, 3 --check failed.
"""
import argparse
import collections
import csv
import datetime
import glob
import os
import re
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")

# Every workload: key, label, chart label, then the argv after the program
# name for the full run and for --quick. Full sizes are chosen so that one
# glibc run takes roughly 0.1-1 s on the 2-core machine; quick ones are a
# tenth or less, so that make bench-quick stays under a minute even while
# neighbours load the machine. realloc-add's last argument is a time limit: an allocator
# that copies the block on every step stops there (shown as DNF).
WORKLOAD_TABLE = [
    ("churn1", "churn, 1 thread", "churn 1T", "churn 1 5000000", "churn 1 800000"),
    ("churn2", "churn, 2 threads", "churn 2T", "churn 2 5000000", "churn 2 800000"),
    ("batch", "batch 128 x 8 B", "batch", "batch 500000", "batch 80000"),
    ("prodcons", "prodcons, both threads on 1 CPU", "prodcons 1 CPU",
     "prodcons 12000000 same", "prodcons 1500000 same"),
    ("prodcons2", "prodcons, 1 CPU each (noisy; not checked)", "prodcons 2 CPUs",
     "prodcons 2000000 split", "prodcons 300000 split"),
    ("ring2", "ring, 2 threads on 1 CPU", "ring 2T", "ring 2 4000000 same", "ring 2 250000 same"),
    ("ring4", "ring, 4 threads on 1 CPU", "ring 4T", "ring 4 2000000 same", "ring 4 125000 same"),
    ("pinned", "pinned: 24 threads on 1 CPU", "24T on 1 CPU",
     "pinned 24 pinned 200000", "pinned 24 pinned 10000"),
    ("pinned-free", "pinned: 24 threads, not pinned", "24T free",
     "pinned 24 free 200000", "pinned 24 free 10000"),
    ("medium1-64k", "medium-churn 64 KiB-1 MiB, 1 thread", "64K-1M 1T",
     "medium-churn 1 64K 1M 200000", "medium-churn 1 64K 1M 5000"),
    ("medium2-64k", "medium-churn 64 KiB-1 MiB, 2 threads", "64K-1M 2T",
     "medium-churn 2 64K 1M 200000", "medium-churn 2 64K 1M 5000"),
    ("medium1-1m", "medium-churn 1-4 MiB, 1 thread", "1M-4M 1T",
     "medium-churn 1 1M 4M 100000", "medium-churn 1 1M 4M 2500"),
    ("medium2-1m", "medium-churn 1-4 MiB, 2 threads", "1M-4M 2T",
     "medium-churn 2 1M 4M 100000", "medium-churn 2 1M 4M 2500"),
    ("large1", "large-churn 4-32 MiB, 1 thread", "large 1T", "large-churn 1 40000", "large-churn 1 1000"),
    ("large2", "large-churn 4-32 MiB, 2 threads", "large 2T", "large-churn 2 20000", "large-churn 2 1000"),
    ("trim-fixed", "trim-fixed (BZ 17195), in a thread", "trim-fixed",
     "trim-fixed 200000 thread", "trim-fixed 20000 thread"),
    ("trim-fixed-main", "trim-fixed (BZ 17195), in main", "trim-fixed main",
     "trim-fixed 200000 main", "trim-fixed 20000 main"),
    ("trim-mixed", "trim-mixed (BZ 17195), in a thread", "trim-mixed",
     "trim-mixed 100 thread", "trim-mixed 10 thread"),
    ("trim-mixed-main", "trim-mixed (BZ 17195), in main", "trim-mixed main",
     "trim-mixed 100 main", "trim-mixed 10 main"),
    ("realloc-add", "realloc-grow +4 KiB steps", "realloc +4K",
     "realloc-grow add 256 3", "realloc-grow add 8 0.25"),
    ("realloc-mul", "realloc-grow x1.5 steps", "realloc x1.5",
     "realloc-grow mul 256", "realloc-grow mul 16"),
    ("memreturn", "memreturn (alloc+touch+free)", "memreturn time", "memreturn 200", "memreturn 64"),
]
Workload = collections.namedtuple("Workload", "key label chart argv")
WORKLOADS = {mode: [Workload(k, label, chart, (full if mode == "full" else quick).split())
                    for k, label, chart, full, quick in WORKLOAD_TABLE]
             for mode in ("full", "quick")}
# --check: vigil must be at least as fast as glibc on these (the steady
# ones; runs whose time follows the neighbours' load on 2 shared cores, and
# the in-main trim controls, are reported only) and keep no more memory in
# memreturn.
SPEED_CHECKED = ["churn1", "churn2", "batch", "prodcons", "ring2", "ring4", "pinned",
                 "medium1-64k", "medium1-1m", "large1", "trim-fixed", "trim-mixed",
                 "realloc-add", "realloc-mul"]
RUN_TIMEOUT_S = 120

# Syscall counts: one more run of a workload under each allocator, untimed,
# under strace -f -c. By default (--syscalls some) for these workloads, or
# with --quick for the trim loops only; --syscalls all counts every one. The start-up row (batch 1: ld.so loading
# the program and the preload, the allocator's first mallocs) shows what
# every other count includes.
SYSCALLS = ["mmap", "munmap", "madvise", "mremap", "mprotect", "rt_sigprocmask", "futex"]
SYSCALLS_COUNTED = ["trim-fixed", "trim-fixed-main", "trim-mixed", "trim-mixed-main",
                    "realloc-add", "realloc-mul", "medium1-1m", "large1"]
STARTUP = Workload("startup", "start-up only (batch 1)", "start-up", ["batch", "1"])


def sh(cmd):
    """Output of a command, or '' if it cannot be run or fails."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def multiarch():
    t = sh(["gcc", "-print-multiarch"]) or sh(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"])
    return t or platform.machine() + "-linux-gnu"


def dpkg_files(pkg):
    out = sh(["dpkg", "-L", pkg])
    return out.splitlines() if out else []


def dpkg_version(pkg):
    """The installed version; one line per architecture (libc6 can be
    installed for a foreign one too), so the first line only."""
    out = sh(["dpkg-query", "-W", "-f=${Version}\n", pkg])
    return out.splitlines()[0] if out else ""


def version_key(path):
    """Sort key putting e.g. clang/14.0.10 after clang/14.0.6."""
    parts = []
    for chunk in path.replace("-", "/").replace(".", "/").split("/"):
        parts.append((0, int(chunk), "") if chunk.isdigit() else (1, 0, chunk))
    return parts


def find_lib(pkg, basename, fallback_globs):
    """A library file: from the package's file list first, then by glob."""
    hits = [f for f in dpkg_files(pkg) if os.path.basename(f) == basename and os.path.isfile(f)]
    if not hits:
        for g in fallback_globs:
            hits += [f for f in glob.glob(g) if os.path.isfile(f)]
    return sorted(hits, key=version_key)[-1] if hits else None


def discover_allocators(build):
    """[(name, preload path or None, package, version)], and notes on skips."""
    triplet = multiarch()
    arch = triplet.split("-")[0]
    libdirs = ["/usr/lib/" + triplet, "/usr/lib", "/lib/" + triplet]
    found, notes = [], []
    found.append(("glibc", None, "libc6", dpkg_version("libc6")))
    vigil = os.path.join(ROOT, build, "libvigil.so")
    if os.path.isfile(vigil):
        rev = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
        dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", "src"])
        found.append(("vigil", vigil, "(this tree)", (rev or "?") + ("+dirty" if dirty else "")))
        # HARDEN=1,2,3: vigil again at those hardening levels, as vigil-h1...
        for lvl in [x.strip() for x in os.environ.get("HARDEN", "").split(",") if x.strip()]:
            if lvl not in ("0", "1", "2", "3"):
                notes.append("HARDEN: level %r is not 0..3; skipped" % lvl)
                continue
            found.append(("vigil-h" + lvl, vigil, "(this tree) harden=" + lvl, (rev or "?") + ("+dirty" if dirty else "")))
    else:
        notes.append("vigil: %s is missing (build it with `make`); skipped" % vigil)
    # VIGIL_BASE=path/libvigil.so: another build (say, of the previous
    # commit) as vigil-base, for an A/B in the same run.
    base = os.environ.get("VIGIL_BASE", "").strip()
    if base and os.path.isfile(base):
        found.append(("vigil-base", os.path.abspath(base), "(VIGIL_BASE)", "?"))
    elif base:
        notes.append("vigil-base: VIGIL_BASE=%s is not a file; skipped" % base)
    others = [
        ("jemalloc", "libjemalloc2", "libjemalloc.so.2",
         [d + "/libjemalloc.so.2" for d in libdirs]),
        ("mimalloc", "libmimalloc2.0", "libmimalloc.so.2",
         [d + "/libmimalloc.so.2" for d in libdirs]),
        ("tcmalloc", "libtcmalloc-minimal4", "libtcmalloc_minimal.so.4",
         [d + "/libtcmalloc_minimal.so.4" for d in libdirs]),
        ("scudo", "libclang-rt-14-dev", "libclang_rt.scudo_standalone-%s.so" % arch,
         ["/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-%s.so" % arch]),
    ]
    for name, pkg, base, globs in others:
        path = find_lib(pkg, base, globs)
        if path:
            found.append((name, path, pkg, dpkg_version(pkg) or "?"))
        else:
            notes.append("%s: %s not found; skipped (install the Debian package %s)"
                         % (name, base, pkg))
    want = os.environ.get("ALLOCATORS", "").strip()
    if want:
        keep = [w.strip() for w in want.split(",") if w.strip()]
        unknown = [k for k in keep if k not in [f[0] for f in found]]
        for k in unknown:
            notes.append("%s: asked for in ALLOCATORS but not available" % k)
        found = [f for f in found if f[0] in keep]
    return found, notes


def parse_line(text):
    """The last 'workload=...' line of a run's stdout as a dict."""
    for line in reversed(text.splitlines()):
        if line.startswith("workload="):
            out = {}
            for tok in line.split():
                k, _, v = tok.partition("=")
                out[k] = v
            return out
    return None


def describe_rc(rc):
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %d" % rc


def find_strace():
    """strace's path and '', or None and why the counts are skipped."""
    path = shutil.which("strace")
    if not path:
        return None, "strace not installed (Debian package strace); syscall counts skipped"
    try:
        subprocess.run([path, "-f", "-c", "-o", os.devnull, "true"], check=True,
                       capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "strace cannot trace here (%s); syscall counts skipped" % e
    return path, ""


def strace_counts(path):
    """{syscall: calls} from an strace -c summary (calls is the 4th column)."""
    counts = dict.fromkeys(SYSCALLS, 0)
    with open(path) as f:
        for line in f:
            t = line.split()
            if len(t) >= 5 and t[-1] in counts and t[3].isdigit():
                counts[t[-1]] = int(t[3])
    return counts


def harden_of(name):
    """vigil-hN: VIGIL_OPTIONS harden=N (HARDEN in discover_allocators)."""
    return name[len("vigil-h"):] if name.startswith("vigil-h") else None


def level_table(workloads, names, levels, med_t, med_rss):
    """Markdown lines: each hardening level's time against level 0 (vigil)
    and against glibc, per workload, and memreturn's peak RSS."""
    md = ["## Hardening levels: time against level 0 and against glibc", "",
          "Each cell: the level's median time / vigil's at level 0 (its slowdown), then its "
          "speed ratio to glibc (glibc's time / its time; < 1.00 is slower than glibc). "
          "Level 0 is the `vigil` column above.", "",
          "| workload | " + " | ".join("harden=%s" % harden_of(n) for n in levels) + " |",
          "|---|" + "---:|" * len(levels)]
    for w in workloads:
        t0, tg = med_t.get((w.key, "vigil")), med_t.get((w.key, "glibc"))
        cells = []
        for n in levels:
            t = med_t.get((w.key, n))
            if not t or not t0:
                cells.append("n/a")
                continue
            cells.append("%.2f× (%s)" % (t / t0, "%.2f" % (tg / t) if tg else "n/a"))
        md.append("| %s | %s |" % (w.label, " | ".join(cells)))
    peak0 = (med_rss.get(("memreturn", "vigil")) or {}).get("rss_peak_kb")
    cells = []
    for n in levels:
        pk = (med_rss.get(("memreturn", n)) or {}).get("rss_peak_kb")
        cells.append("%.1f MiB (%+.1f%%)" % (pk / 1024, 100.0 * (pk - peak0) / peak0) if pk and peak0 else "n/a")
    md.append("| memreturn peak RSS (level 0: %s) | %s |"
              % ("%.1f MiB" % (peak0 / 1024) if peak0 else "n/a", " | ".join(cells)))
    md.append("")
    return md


def run_one(binary, argv, preload, strace=None, harden=None):
    """One run: (result dict or None, wall seconds, error). With strace, the
    run is traced (strace -f -c) and the result carries the SYSCALLS counts."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if harden is not None:
        env["VIGIL_OPTIONS"] = ":".join(filter(None, [env.get("VIGIL_OPTIONS"), "harden=" + harden]))
    cmd = [binary] + argv
    timeout = RUN_TIMEOUT_S
    if strace:
        fd, summary = tempfile.mkstemp(prefix="vigil-bench-strace-")
        os.close(fd)
        cmd = ([strace, "-f", "-c", "-e", "trace=" + ",".join(SYSCALLS), "-o", summary]
               + (["-E", "LD_PRELOAD=" + os.path.realpath(preload)] if preload else []) + ["--"] + cmd)
        timeout *= 3
    elif preload:
        env["LD_PRELOAD"] = os.path.realpath(preload)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0, "timed out after %d s" % timeout
    finally:
        if strace:
            counts = strace_counts(summary)
            os.remove(summary)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()
        return None, wall, describe_rc(p.returncode) + (": " + err[-1] if err else "")
    rec = parse_line(p.stdout)
    if rec is None or "seconds" not in rec:
        return None, wall, "no result line in its output"
    if preload and rec.get("preload_mapped") != "1":
        return None, wall, "LD_PRELOAD library was not mapped (ld.so skipped it?)"
    if strace:
        rec.update(counts)
    return rec, wall, ""


def fnum(x, digits=3):
    return "%.*f" % (digits, x)


def mib(nbytes):
    return "%.0f" % (float(nbytes) / 2**20)


def fmt_ratio(r, upper, lower):
    """A speed ratio in bold. upper: the allocator's runs include ones that
    stopped at their time limit, so its time is a lower bound and the ratio
    an upper bound (shown with ≤); lower: the same for the reference."""
    if r is None or (upper and lower):
        return "n/a"
    return "**%s%.2f**" % ("≤" if upper else "≥" if lower else "", r)


def best_peer(values, names):
    """The allocator other than vigil with the lowest value, or None."""
    peers = [n for n in names if n != "vigil" and values.get(n) is not None]
    return min(peers, key=lambda n: values[n]) if peers else None


def fmt_ops(n):
    n = float(n)
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return ("%.1f" % (n / div)).rstrip("0").rstrip(".") + unit
    return "%d" % n


def median_of(records, key):
    vals = [float(r[key]) for r in records if r.get(key) not in (None, "")]
    return statistics.median(vals) if vals else None


def spread_pct(records, key):
    vals = [float(r[key]) for r in records if r.get(key) not in (None, "")]
    if len(vals) < 2:
        return None
    med = statistics.median(vals)
    return 100.0 * (max(vals) - min(vals)) / 2.0 / med if med else None


def machine_info():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    nproc = sh(["nproc"]) or str(os.cpu_count())
    return {"arch": sh(["uname", "-m"]) or platform.machine(), "cpu": cpu, "nproc": nproc,
            "kernel": sh(["uname", "-r"]) or platform.release()}


def write_png(path, names, rows, labels):
    """Clustered bar chart of speed ratios with gnuplot; returns a note."""
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not installed (Debian package gnuplot-nox); no PNG written"
    term = sh([gp, "-e", "set terminal"])
    terminal = "pngcairo" if "pngcairo" in term else "png"
    dat = path + ".dat.tmp"
    script = path + ".gp.tmp"
    with open(dat, "w") as f:
        f.write("workload " + " ".join(names) + "\n")
        for key, label in labels:
            vals = []
            for n in names:
                v = rows.get((key, n))
                vals.append("NaN" if v is None else "%.4f" % v)
            f.write('"%s" %s\n' % (label, " ".join(vals)))
    plots = ["'%s' using %d:xtic(1) title columnheader(%d)" % (dat, i + 2, i + 2)
             if i == 0 else "'' using %d title columnheader(%d)" % (i + 2, i + 2)
             for i in range(len(names))]
    with open(script, "w") as f:
        f.write("""set terminal %s size 1600,700 noenhanced
set output '%s'
set title 'Speed relative to glibc (glibc time / allocator time; > 1 = faster than glibc; log scale)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.0078125:32]
set rmargin 10
set ylabel 'ratio to glibc (median of interleaved runs)'
set grid ytics
set key below horizontal
set xtics nomirror rotate by -35
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 linewidth 2 front
plot %s
""" % (terminal, path, ", ".join(plots)))
    try:
        subprocess.run([gp, script], check=True, capture_output=True, text=True, timeout=60)
        note = ""
    except (OSError, subprocess.SubprocessError) as e:
        note = "gnuplot failed (%s); no PNG written" % e
    finally:
        for t in (dat, script):
            try:
                os.remove(t)
            except OSError:
                pass
    return note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer ops and runs (smoke check)")
    ap.add_argument("--check", action="store_true",
                    help="exit 3 if vigil is slower than glibc on a workload of SPEED_CHECKED "
                         "or keeps more memory in memreturn (median ratio < 1.0)")
    ap.add_argument("--runs", type=int, default=None, help="runs per workload and allocator")
    ap.add_argument("--name", default=None,
                    help="write bench/results/NAME.{md,csv,png} (default: latest, or quick with --quick)")
    ap.add_argument("--syscalls", choices=("some", "all", "none"), default="some",
                    help="count the mmap/munmap/madvise/mremap/mprotect/rt_sigprocmask/futex calls under strace, in one "
                         "extra untimed run per allocator, for some workloads (default), all or none")
    args = ap.parse_args()

    mode = "quick" if args.quick else "full"
    runs = args.runs if args.runs is not None else int(os.environ.get("RUNS", "3" if args.quick else "5"))
    if runs < 1:
        print("run.py: RUNS must be at least 1", file=sys.stderr)
        return 2
    build = os.environ.get("BUILD", "build")
    binary = os.path.join(ROOT, build, "bench", "workloads")
    if not os.access(binary, os.X_OK):
        print("run.py: %s is missing; build it with `make bench` (or `make %s/bench/workloads`)"
              % (binary, build), file=sys.stderr)
        return 2
    allocs, notes = discover_allocators(build)
    for n in notes:
        print("note: " + n, file=sys.stderr)
    names = [a[0] for a in allocs]
    if not allocs:
        print("run.py: no allocator to run", file=sys.stderr)
        return 2
    workloads = WORKLOADS[mode]

    os.makedirs(RESULTS, exist_ok=True)
    name = args.name or ("latest" if mode == "full" else "quick")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        print("run.py: --name takes letters, digits, '.', '_' and '-' (got %r)" % name, file=sys.stderr)
        return 2
    stem = os.path.join(RESULTS, name)
    started = datetime.datetime.now(datetime.timezone.utc)
    raw, failures = [], []
    total = runs * len(workloads) * len(allocs)
    print("bench: %d workloads x %d allocators (%s) x %d runs, interleaved"
          % (len(workloads), len(allocs), ", ".join(names), runs), file=sys.stderr)
    done = 0
    for i in range(runs):
        rot = i % len(allocs)
        order = allocs[rot:] + allocs[:rot]
        for w in workloads:
            for name, path, _, _ in order:
                done += 1
                rec, wall, err = run_one(binary, w.argv, path, harden=harden_of(name))
                row = dict(rec or {})
                row.update({"run": i + 1, "workload": w.key, "allocator": name,
                            "status": "ok" if rec else "FAIL", "error": err,
                            "wall_seconds": "%.4f" % wall, "argv": " ".join(w.argv)})
                if rec:
                    extra = ""
                    if w.key == "memreturn":
                        extra = "  rss_after_free=%.1f MiB" % (int(rec["rss_after_free_kb"]) / 1024)
                    elif rec.get("finished") == "0":
                        extra = "  stopped at the time limit (%s MiB reached)" % mib(rec["reached_bytes"])
                    print("[%3d/%d] run %d %-15s %-9s %8.4f s%s" % (
                        done, total, i + 1, w.key, name, float(rec["seconds"]), extra),
                        file=sys.stderr, flush=True)
                else:
                    failures.append("run %d: %s under %s: %s" % (i + 1, w.key, name, err))
                    print("[%3d/%d] run %d %-15s %-9s FAILED: %s" % (done, total, i + 1, w.key, name, err),
                          file=sys.stderr, flush=True)
                raw.append(row)

    # ---- syscall counts: untimed runs under strace, after the timed ones
    some = [k for k in SYSCALLS_COUNTED if k.startswith("trim-") or not args.quick]
    counted = [w for w in workloads if args.syscalls == "all"
               or (args.syscalls == "some" and w.key in some)]
    sys_counts = {}
    strace, sys_note = find_strace() if counted else (None, "")
    if sys_note:
        print("note: " + sys_note, file=sys.stderr)
        notes.append(sys_note)
    if strace:
        counted = [STARTUP] + counted
        print("bench: syscall counts under strace, %d workloads x %d allocators, untimed"
              % (len(counted), len(allocs)), file=sys.stderr)
        for w in counted:
            for name, path, _, _ in allocs:
                rec, wall, err = run_one(binary, w.argv, path, strace=strace, harden=harden_of(name))
                row = dict(rec or {})
                row.update({"run": "strace", "workload": w.key, "allocator": name,
                            "status": "ok" if rec else "FAIL", "error": err,
                            "wall_seconds": "%.4f" % wall, "argv": " ".join(w.argv)})
                raw.append(row)
                if rec:
                    sys_counts[(w.key, name)] = rec
                    print("  %-15s %-9s %s" % (w.key, name, " ".join(
                        "%s=%d" % (c, rec[c]) for c in SYSCALLS)), file=sys.stderr, flush=True)
                else:
                    failures.append("strace run: %s under %s: %s" % (w.key, name, err))
                    print("  %-15s %-9s FAILED: %s" % (w.key, name, err), file=sys.stderr, flush=True)

    # ---- aggregate
    ok = {}
    for row in raw:
        if row["status"] == "ok" and row["run"] != "strace":
            ok.setdefault((row["workload"], row["allocator"]), []).append(row)
    med_t, med_rss, spread, dnf, bound = {}, {}, {}, {}, {}
    for k, recs in ok.items():
        med_t[k] = median_of(recs, "seconds")
        spread[k] = spread_pct(recs, "seconds")
        # Runs stopped at their time limit (DNF): their time is only a lower
        # bound. They sort above every finished run, so the median is exact
        # unless they are at least half of the runs; then it is a bound too.
        dnf[k] = [r for r in recs if r.get("finished") == "0"]
        bound[k] = len(dnf[k]) > (len(recs) - 1) // 2
        if k[0] == "memreturn":
            med_rss[k] = {f: median_of(recs, f) for f in
                          ("rss_before_kb", "rss_peak_kb", "rss_after_free_kb")}
    speed_ratio = {}
    for w in workloads:
        base = med_t.get((w.key, "glibc"))
        for n in names:
            t = med_t.get((w.key, n))
            speed_ratio[(w.key, n)] = base / t if base and t else None
    rss_ratio = {}
    base_rss = med_rss.get(("memreturn", "glibc"), {}).get("rss_after_free_kb")
    for n in names:
        r = med_rss.get(("memreturn", n), {}).get("rss_after_free_kb")
        rss_ratio[n] = base_rss / r if base_rss and r else None

    # ---- markdown
    info = machine_info()
    md = []
    md.append("# vigil benchmark results%s" % (" (quick smoke run)" if mode == "quick" else ""))
    md.append("")
    md.append("- date: %s" % started.strftime("%Y-%m-%d %H:%M UTC"))
    md.append("- machine: %s, %s, nproc %s, Linux %s" % (info["arch"], info["cpu"], info["nproc"], info["kernel"]))
    md.append("- method: %d runs of each (workload, allocator), interleaved round-robin in one session; "
              "every number is the median of those runs; ±x%% is half the min-max range relative to the median"
              % runs)
    if os.environ.get("VIGIL_OPTIONS"):
        md.append("- VIGIL_OPTIONS=%s" % os.environ["VIGIL_OPTIONS"])
    md.append("")
    md.append("## Speed: ratio to glibc = glibc time / allocator time (> 1.00 means faster than glibc)")
    md.append("")
    md.append("The last two columns name the fastest allocator other than vigil and give "
              "vigil's ratio to it (its time / vigil's; < 1.00, marked behind, means vigil is slower).")
    md.append("")
    vs_best = "vigil" in names and len(names) > 1
    md.append("| workload | ops | " + " | ".join(names)
              + (" | best peer | vigil vs best |" if vs_best else " |"))
    md.append("|---|---:|" + "---:|" * (len(names) + 2 * vs_best))
    for w in workloads:
        cells = []
        ops = ""
        for n in names:
            k = (w.key, n)
            recs = ok.get(k)
            if recs and not ops:
                ops = fmt_ops(max(int(r.get("ops", 0)) for r in recs))
            t, s = med_t.get(k), spread.get(k)
            if t is None:
                cells.append("failed")
                continue
            cell = "%s (%s%s s%s)" % (
                fmt_ratio(speed_ratio.get(k), n != "glibc" and bound[k],
                          n != "glibc" and bound.get((w.key, "glibc"), False)),
                "≥" if bound[k] else "", fnum(t), " ±%.0f%%" % s if s is not None else "")
            if dnf.get(k):
                cell += " DNF %d/%d, reached %s MiB" % (
                    len(dnf[k]), len(recs), mib(statistics.median(int(r["reached_bytes"]) for r in dnf[k])))
            if len(recs) < runs:
                cell += " [%d/%d ok]" % (len(recs), runs)
            cells.append(cell)
        if vs_best:
            best = best_peer({n: med_t.get((w.key, n)) for n in names}, names)
            vt = med_t.get((w.key, "vigil"))
            if best and vt:
                v_dnf, b_dnf = bound[(w.key, "vigil")], bound[(w.key, best)]
                r = med_t[(w.key, best)] / vt
                cells.append("%s (%s%s s)" % (best, "≥" if b_dnf else "", fnum(med_t[(w.key, best)])))
                cells.append(fmt_ratio(r, v_dnf, b_dnf) + (" behind" if r < 1 and not b_dnf else ""))
            else:
                cells += ["n/a", "n/a"]
        checked = " ✓" if w.key in SPEED_CHECKED else ""
        md.append("| %s%s | %s | %s |" % (w.label, checked, ops, " | ".join(cells)))
    md.append("")
    md.append("✓: `--check` requires vigil's ratio to glibc to be at least 1.00 here.")
    md.append("")
    md.append("## Memory returned: memreturn, RSS after freeing everything "
              "(lower is better; ratio to glibc = glibc RSS / allocator RSS, > 1.00 means less kept than glibc)")
    md.append("")
    md.append("| allocator | RSS before (MiB) | RSS peak (MiB) | RSS after free (MiB) | after free / peak | ratio to glibc |")
    md.append("|---|---:|---:|---:|---:|---:|")
    for n in names:
        m = med_rss.get(("memreturn", n))
        if not m or m.get("rss_after_free_kb") is None:
            md.append("| %s | failed | | | | |" % n)
            continue
        pk, af = m["rss_peak_kb"], m["rss_after_free_kb"]
        r = rss_ratio.get(n)
        md.append("| %s | %.1f | %.1f | **%.1f** | %.0f%% | %s |" % (
            n, m["rss_before_kb"] / 1024, pk / 1024, af / 1024, 100.0 * af / pk if pk else 0,
            "**%.2f**" % r if r is not None else "n/a"))
    md.append("")
    after = {n: (med_rss.get(("memreturn", n)) or {}).get("rss_after_free_kb") for n in names}
    best = best_peer(after, names)
    if best and after.get("vigil"):
        md.append("Best peer: %s keeps **%.1f MiB** after free, vigil %.1f MiB: ratio **%.2f** "
                  "(best peer's RSS / vigil's; < 1.00 means vigil keeps more)."
                  % (best, after[best] / 1024, after["vigil"] / 1024, after[best] / after["vigil"]))
        md.append("")
    levels = [n for n in names if harden_of(n) is not None]
    if levels and "vigil" in names:
        md.extend(level_table(workloads, names, levels, med_t, med_rss))
    mem_argv = [w for w in workloads if w.key == "memreturn"][0].argv
    md.append("memreturn allocates %s MiB (blocks of 16 B..64 KiB, log-uniform, plus ~10%% in 1 MiB blocks), "
              "touches every byte, frees it all in random order and reads RSS from /proc/self/statm "
              "right away (no malloc_trim, no idle time)." % mem_argv[1])
    md.append("")
    if sys_counts:
        md.append("## Syscalls: mmap / munmap / madvise / mremap / mprotect / rt_sigprocmask / futex calls in one run")
        md.append("")
        md.append("Counted with `strace -f -c -e trace=%s` in a separate, untimed run of each "
                  "workload under each allocator; every count includes the start-up row's."
                  % ",".join(SYSCALLS))
        md.append("")
        md.append("| workload | ops | " + " | ".join(names) + " |")
        md.append("|---|---:|" + "---:|" * len(names))
        for w in counted:
            recs = [sys_counts.get((w.key, n)) for n in names]
            ops = max([int(r.get("ops", 0)) for r in recs if r] or [0])
            cells = ["failed" if not r else "/".join(str(r[c]) for c in SYSCALLS)
                     + (" (stopped at %s MiB)" % mib(r["reached_bytes"]) if r.get("finished") == "0" else "")
                     for r in recs]
            md.append("| %s | %s | %s |" % (w.label, fmt_ops(ops), " | ".join(cells)))
        md.append("")
    md.append("## Allocators")
    md.append("")
    md.append("| name | library | package | version |")
    md.append("|---|---|---|---|")
    for name, path, pkg, ver in allocs:
        shown = os.path.relpath(path, ROOT) if path and path.startswith(ROOT) else (path or "(none: libc malloc)")
        md.append("| %s | %s | %s | %s |" % (name, shown, pkg, ver))
    if notes:
        md.append("")
        for n in notes:
            md.append("- note: " + n)
    md.append("")

    # ---- check
    check_failures = []
    check_lines = []
    if args.check:
        if "vigil" not in names or "glibc" not in names:
            check_failures.append("vigil and glibc must both be measured for --check")
        else:
            for key in SPEED_CHECKED:
                r = speed_ratio.get((key, "vigil"))
                label = [w.label for w in workloads if w.key == key][0]
                if r is None:
                    check_failures.append("%s: no ratio (a run failed)" % label)
                    continue
                line = "%s: vigil %.3f s vs glibc %.3f s, speed ratio %.2f" % (
                    label, med_t[(key, "vigil")], med_t[(key, "glibc")], r)
                if bound[(key, "vigil")]:
                    line += " (vigil stopped at the time limit)"
                (check_failures if r < 1.0 or bound[(key, "vigil")] else check_lines).append(line)
            r = rss_ratio.get("vigil")
            if r is None:
                check_failures.append("memreturn: no RSS ratio (a run failed)")
            else:
                line = "memreturn: vigil keeps %.1f MiB vs glibc %.1f MiB after free, ratio %.2f" % (
                    med_rss[("memreturn", "vigil")]["rss_after_free_kb"] / 1024,
                    med_rss[("memreturn", "glibc")]["rss_after_free_kb"] / 1024, r)
                (check_failures if r < 1.0 else check_lines).append(line)

    if failures:
        md.append("## Failed runs")
        md.append("")
        for f in failures:
            md.append("- " + f)
        md.append("")

    # ---- write files
    fields = ["run", "workload", "allocator", "status", "error", "argv", "threads", "ops", "seconds",
              "ns_per_op", "wall_seconds", "rss_before_kb", "rss_peak_kb", "rss_after_free_kb",
              "after_free_pct_of_peak", "alloc_seconds", "free_seconds", "checksum", "placement",
              "cpus", "where", "steps", "moves", "finished", "reached_bytes", "preload_mapped"] + SYSCALLS
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for row in raw:
            w.writerow(row)
    png_note = write_png(stem + ".png", names, speed_ratio, [(w.key, w.chart) for w in workloads])
    if png_note:
        md.append("- note: " + png_note)
        md.append("")
    else:
        md.append("![speed ratios](%s)" % os.path.basename(stem + ".png"))
        md.append("")
    with open(stem + ".md", "w") as f:
        f.write("\n".join(md))

    # ---- report
    print()
    print("\n".join(md))
    print("wrote %s.md, %s.csv%s" % (os.path.relpath(stem, ROOT), os.path.relpath(stem, ROOT),
                                     "" if png_note else ", %s.png" % os.path.relpath(stem, ROOT)))
    if png_note:
        print("note: " + png_note)
    rc = 0
    if failures:
        print("\n%d run(s) FAILED:" % len(failures), file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        rc = 1
    if args.check:
        for line in check_lines:
            print("check ok:   " + line)
        for line in check_failures:
            print("check FAIL: " + line, file=sys.stderr)
        if check_failures:
            print("check: vigil is behind glibc in %d comparison(s)" % len(check_failures), file=sys.stderr)
            rc = rc or 3
        else:
            print("check: vigil is at least as fast as glibc and returns at least as much memory")
    return rc


if __name__ == "__main__":
    sys.exit(main())
