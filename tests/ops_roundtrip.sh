#!/usr/bin/env bash
# vigil-ops keeps its promise (fuzz/FORMAT.md):
#   - round trip: for ~2000 random binary inputs and a set of directed ones
#     (every size and alignment selector branch, the extreme tune, spawn and
#     fork values), print -> asm -> print gives the same op lines.  prog_format
#     prints every field the decoder sets, so equal lines mean
#     decode(asm(print(x))) == decode(x), op for op;
#   - truncation: every prefix of a few inputs decodes to a prefix of the full
#     op list, and the op count never drops as the prefix grows;
#   - bad input: asm reports FILE:LINE and exits non-zero on a bad op name,
#     a missing key, an out-of-range value, binary garbage and too many ops;
#     a missing file is an error; an empty file prints 0 ops; a huge input
#     (file or pipe) is capped at PROG_MAX_OPS ops and says so;
#   - the seeds: every corpus/**/*.ops assembles, and printing it as text
#     then assembling that gives the same bytes;
#   - negative control: one tampered printed line makes the comparison fail,
#     so the comparison bites.
# Builds $BUILD/vigil-ops with make -f Makefile -f fuzz/ops.mk when needed.
# Exit: 0 pass, 1 fail, 77 skip (no python3).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
command -v python3 >/dev/null || { echo "skip: python3 not found (Debian package python3)"; exit 77; }
if ! out=$(make -s -f Makefile -f fuzz/ops.mk "$BUILD/vigil-ops" BUILD="$BUILD" 2>&1); then
  echo "FAIL: building $BUILD/vigil-ops:"; echo "$out"; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$BUILD/vigil-ops" "$tmp" <<'PY'
import os, random, re, struct, subprocess, sys

tool, tmp = sys.argv[1], sys.argv[2]
MAX_OPS = 4096
fails = []

def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)

def run(*args, stdin=None):
    return subprocess.run([tool, *args], input=stdin, capture_output=True, timeout=60)

HEADER = re.compile(r"^# (.*): (\d+) ops from (\d+) bytes \((\d+) trailing bytes ignored\)$")

def print_many(paths):
    """print all paths in one call; {path: (nops, nbytes, trailing, [op lines])}"""
    r = run("print", *paths)
    if r.returncode != 0:
        fail("print exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[:300]))
    out, cur = {}, None
    for line in r.stdout.decode().splitlines():
        m = HEADER.match(line)
        if m:
            cur = m.group(1)
            out[cur] = (int(m.group(2)), int(m.group(3)), int(m.group(4)), [])
        elif line.startswith("# "):
            continue
        else:
            out[cur][3].append(line)
    for p in paths:
        if p not in out:
            fail("print gave no section for " + p)
    return out

def write(name, data):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    return path

def first_difference(a, b):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "<none>"
        y = b[i] if i < len(b) else "<none>"
        if x != y:
            return i, x, y
    return None

def roundtrip(paths, first):
    """print -> asm -> print for each path; returns (inputs ok, ops checked)."""
    again, ok, nops = {}, 0, 0
    for p in paths:
        n, nbytes, trailing, lines = first[p]
        if n != len(lines):
            fail("%s: header says %d ops, %d lines printed" % (p, n, len(lines)))
        txt = p + ".txt"
        with open(txt, "w") as f:
            f.write("# %s: %d ops from %d bytes (%d trailing bytes ignored)\n" % (p, n, nbytes, trailing))
            f.write("\n".join(lines) + "\n")
        r = run("asm", txt, "-o", p + ".asm")
        if r.returncode != 0:
            err = r.stderr.decode(errors="replace").strip()
            m = re.match(re.escape(txt) + r":(\d+): ", err)
            shown = open(txt).read().splitlines()[int(m.group(1)) - 1] if m else "?"
            fail("asm of print(%s) failed: %s (the line: %r)" % (p, err, shown))
            continue
        again[p + ".asm"] = p
    second = print_many(list(again))
    for q, p in again.items():
        d = first_difference(first[p][3], second[q][3])
        if d:
            fail("%s: round trip differs at op %d: %r became %r" % (p, d[0], d[1], d[2]))
        elif second[q][2] != 0:
            fail("%s: asm output has %d trailing bytes" % (p, second[q][2]))
        else:
            ok += 1
            nops += len(first[p][3])
    return ok, nops

rng = random.Random(20241130)

# ---- random inputs ----
rand_paths = []
for i in range(2000):
    n = rng.randint(0, 300)
    rand_paths.append(write("r%04d.bin" % i, bytes(rng.getrandbits(8) for _ in range(n))))

# ---- directed inputs: every selector branch and the extreme values ----
def op_size_sel(sel, v, w):                       # malloc slot=5, size selector sel with bytes v, w
    more = {0: b"", 5: bytes([w]), 6: bytes([w, v])}.get(sel & 7, bytes([w]))
    return bytes([0, 5, sel, v]) + more
directed = {}
sz = b"".join(op_size_sel(s + 8 * (v % 32), v, w) for s in range(7)
              for v in (0, 1, 5, 43, 44, 63, 64, 127, 128, 191, 255)
              for w in (0, 1, 3, 4, 6, 8, 16, 32, 127, 128, 255))
sz += b"".join(bytes([0, 63, 7]) + struct.pack("<Q", x)
               for x in (0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64 - 2, 2**40))
directed["sizes"] = sz
directed["aligns"] = b"".join(bytes([5 + k % 3, 9, a, 0, 16]) for k, a in enumerate(range(255))) + \
    b"".join(bytes([6, 1, 255]) + struct.pack("<Q", x) + bytes([0, 1]) for x in (0, 3, 2**63, 2**64 - 1))
ints = (0, 1, -1, 2**31 - 1, -2**31, 12345)
directed["tune"] = b"".join(bytes([14, p % 256]) + struct.pack("<i", v) for p in range(255) for v in (-1, 7)) + \
    b"".join(bytes([14, 255]) + struct.pack("<ii", p, v) for p in ints for v in ints)
directed["structure"] = bytes([15, 2, 63, 19, 31, 15, 0, 0, 16, 2, 17, 63, 7, 18, 7, 63, 11, 63, 255,
                               12, 63, 10, 63, 4, 63, 13, 0, 9, 19, 0, 15, 1, 1, 3, 63, 3, 1, 2, 3, 1, 2])
dir_paths = [write("d-%s.bin" % k, v) for k, v in directed.items()]

first = print_many(rand_paths + dir_paths)
ok, nops = roundtrip(rand_paths + dir_paths, first)
nsel = sum(len(first[p][3]) for p in dir_paths)
print("round trip: %d of %d inputs (%d random, %d directed with %d ops), %d ops in all"
      % (ok, len(rand_paths) + len(dir_paths), len(rand_paths), len(dir_paths), nsel, nops))

# ---- truncation: every prefix decodes to a prefix of the op list ----
longest = sorted(rand_paths, key=os.path.getsize)[-4:] + [dir_paths[-1]]
npref = 0
for p in longest:
    data = open(p, "rb").read()
    full = first[p][3]
    prefs = [write(os.path.basename(p) + ".p%03d" % L, data[:L]) for L in range(len(data) + 1)]
    got = print_many(prefs)
    last = 0
    # A spawn or fork line's note ("# only K of its N ops follow") depends on
    # what follows; the op text and its indentation do not.
    def ops_only(ls):
        return [l.split("  #")[0] for l in ls]
    for L, q in enumerate(prefs):
        n, nbytes, trailing, lines = got[q]
        npref += 1
        if ops_only(lines) != ops_only(full[:len(lines)]) or n < last or nbytes != L or trailing > L:
            fail("%s: prefix of %d bytes: %d ops, not a prefix of the %d-op program" % (p, L, n, len(full)))
            last = -1
            break
        last = n
    if last >= 0 and last != len(full):
        fail("%s: the full-length prefix gave %d ops, not %d" % (p, last, len(full)))
print("truncation: %d prefixes of %d inputs decode to prefixes of their programs" % (npref, len(longest)))

# ---- bad input ----
def expect_error(what, args, pattern, stdin=None, rc=1):
    r = run(*args, stdin=stdin)
    err = r.stderr.decode(errors="replace")
    if r.returncode != rc or not re.search(pattern, err):
        fail("%s: exit %d (want %d), stderr %r (want /%s/)" % (what, r.returncode, rc, err[:200], pattern))
    return r

bad = {
    "bad op name": ("malloc slot=1 size=8\n# comment\nmallocc slot=1 size=8\n", 3, r"unknown op 'mallocc'"),
    "missing key": ("\n  free slot=2\nmalloc slot=1\n", 3, r"missing or bad size="),
    "slot out of range": ("fill slot=1 byte=2\n\n\nfree slot=64\n", 4, r"slot= out of range"),
    "byte out of range": ("fill slot=1 byte=256\n", 1, r"byte= out of range"),
    "spawn ops out of range": ("spawn thread=1 ops=65\n", 1, r"ops= out of range"),
    "fork ops out of range": ("fork ops=33\n", 1, r"ops= out of range"),
    "thread 0": ("join thread=0\n", 1, r"thread= out of range"),
}
for what, (text, line, msg) in bad.items():
    path = write(what.replace(" ", "-") + ".txt", text.encode())
    expect_error(what, ("asm", path, "-o", path + ".bin"), r"^%s:%d: .*%s" % (re.escape(path), line, msg))
    if os.path.exists(path + ".bin"):
        fail("%s: asm wrote output despite the error" % what)
garbage = bytes(rng.getrandbits(8) for _ in range(4096))
expect_error("binary garbage", ("asm", write("garbage.bin", garbage), "-o", os.path.join(tmp, "g.out")),
             r"garbage\.bin:\d+: ")
noNUL = bytes(b for b in garbage if b not in (0, 10, 32, 35, 9)) + b"\n"
expect_error("garbage without NUL", ("asm", "-", "-o", os.path.join(tmp, "g2.out")), r"^-:1: unknown op", stdin=noNUL)
expect_error("too many ops", ("asm", "-", "-o", os.path.join(tmp, "many.out")), r"^-:4097: more than 4096 ops",
             stdin=b"free slot=0\n" * 4097)
expect_error("print of a missing file", ("print", os.path.join(tmp, "nope.bin")), r"No such file")
expect_error("asm of a missing file", ("asm", os.path.join(tmp, "nope.ops"), "-o", os.path.join(tmp, "x")),
             r"No such file")
expect_error("asm usage", ("asm",), r"usage", rc=2)
r = run("print", write("empty.bin", b""))
if r.returncode != 0 or not r.stdout.decode().startswith("# %s: 0 ops from 0 bytes (0 trailing bytes ignored)\n"
                                                          % os.path.join(tmp, "empty.bin")) \
        or len(r.stdout.decode().splitlines()) != 1:
    fail("print of an empty file: exit %d, %r" % (r.returncode, r.stdout[:200]))
big = bytes(1 << 20)                                   # 4 bytes per op: malloc slot=0 size=0
for how, args, stdin in (("file", ("print", write("big.bin", big)), None), ("pipe", ("print", "-"), big)):
    r = run(*args, stdin=stdin)
    lines = r.stdout.decode().splitlines()
    if r.returncode != 0 or not re.search(r"capped at 4096 ops", r.stderr.decode()) \
            or not re.match(r"# .*: 4096 ops from 1048576 bytes \(1032192 trailing bytes ignored\)", lines[0]) \
            or sum(1 for l in lines if not l.startswith("#")) != MAX_OPS:
        fail("huge input (%s): exit %d, first line %r, stderr %r" % (how, r.returncode, lines[:1], r.stderr[:200]))
print("bad input: %d asm errors with FILE:LINE, garbage, too many ops, missing files, empty and huge inputs"
      % len(bad))

# ---- the seeds: each assembles, and print(seed.ops) assembles to the same bytes ----
nseeds = 0
for root, _, files in sorted(os.walk("corpus")):
    for name in sorted(files):
        if not name.endswith(".ops"):
            continue
        seed = os.path.join(root, name)
        a = run("asm", seed, "-o", os.path.join(tmp, "seed.bin"))
        p = run("print", seed)
        b = run("asm", "-", "-o", os.path.join(tmp, "seed2.bin"), stdin=p.stdout)
        if a.returncode or p.returncode or b.returncode:
            fail("seed %s: %s" % (seed, (a.stderr + p.stderr + b.stderr).decode(errors="replace").strip()))
        elif open(os.path.join(tmp, "seed.bin"), "rb").read() != open(os.path.join(tmp, "seed2.bin"), "rb").read():
            fail("seed %s: print then asm changed the program" % seed)
        nseeds += 1
print("seeds: %d corpus .ops files assemble and survive print" % nseeds)

# ---- print --target T: the target's own leading bytes, as the target reads them
ntarget = 0
for data in [bytes([2, 7, 64, 0, 0, 1, 10]), bytes([3]) + b"a=1" + bytes([0, 1, 10]), bytes([200, 1, 2]), b"", bytes([5])]:
    path = write("target.bin", data)
    for target, skip in [("corrupt", min(4, len(data))),
                         ("options", 1 + min(data[0], len(data) - 1) if data else 0), ("api", 0)]:
        a, b = run("print", "--target", target, path), run("print", "--skip", str(skip), path)
        if a.returncode or b.returncode or a.stdout != b.stdout:
            fail("print --target %s of %r differs from --skip %d" % (target, data, skip))
        ntarget += 1
print("targets: print --target matches the skip each target reads, %d cases" % ntarget)

# ---- negative control: a tampered printed line must be caught ----
victim = next(p for p in rand_paths if any(" size=" in l for l in first[p][3]))
lines = list(first[victim][3])
k = next(i for i, l in enumerate(lines) if " size=" in l)
lines[k] = re.sub(r" size=(\d+)", lambda m: " size=%d" % ((int(m.group(1)) + 1) % 2**64), lines[k], count=1)
with open(victim + ".tampered.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
r = run("asm", victim + ".tampered.txt", "-o", victim + ".tampered")
d = first_difference(first[victim][3], print_many([victim + ".tampered"])[victim + ".tampered"][3])
if r.returncode != 0 or d is None or d[0] != k:
    fail("negative control: a tampered line (op %d of %s) was not detected" % (k, victim))
else:
    print("negative control: tampering op %d (%r -> %r) is detected" % (k, d[1], d[2]))

if fails:
    print("ops_roundtrip: FAIL (%d problems)" % len(fails))
    sys.exit(1)
print("ops_roundtrip: PASS: %d inputs round-trip (%d ops), %d prefixes, %d error cases, %d seeds, negative control bites"
      % (ok, nops, npref, len(bad) + 7, nseeds))
PY
