/* vigil benchmark workloads.
 *
 *   workloads churn T [ops_per_thread]   T threads replacing random slots
 *   workloads batch [rounds]             128 x 8 B allocated, then all freed
 *   workloads prodcons [items [same|split|free]]  producer mallocs, consumer frees
 *   workloads memreturn [MiB [settle_ms]] large mixed set, free all, read RSS
 *   workloads medium-churn T LO HI [ops]  churn of 64 blocks of LO..HI bytes
 *   workloads large-churn T [ops]        churn of 16 blocks of 4..32 MiB
 *   workloads ring T [items [same|split|free]]  T threads pass blocks round a ring
 *   workloads trim-fixed [iters [thread|main]]  glibc BZ 17195: 48 pages, again and again
 *   workloads trim-mixed [rounds [thread|main]] glibc BZ 17195: 116 blocks of 1..58 pages
 *   workloads pinned T pinned|free [ops] T threads churning, on one CPU or all
 *   workloads realloc-grow add|mul [max_MiB [limit_s]]  one block grown by realloc
 *
 * Run `workloads` alone for the exact syntax; a bad argument exits 2 with
 * the workload's usage line.
 *
 * Every workload times itself with clock_gettime(CLOCK_MONOTONIC) and prints
 * one line of key=value pairs on stdout, e.g.
 *
 *   workload=churn threads=2 ops=4000000 seconds=0.612 rss_before_kb=...
 *
 * It calls only the standard malloc, realloc and free, so the allocator
 * under test is whatever the process resolves them to (glibc, or an
 * LD_PRELOADed library).
 * When LD_PRELOAD is set, the line also carries preload_mapped=1 if that
 * library really is mapped into the process (0 if ld.so skipped it), so a
 * driver can tell a silent fallback to glibc from a real measurement.
 *
 * Exit status: 0 on success, 1 on a failed allocation or a corrupted block
 * (the blocks carry a tag that is checked before free), 2 on bad usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Make a pointer escape so the compiler cannot pair up and delete a
 * malloc/free (GCC removes such pairs when the pointer is never observed). */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident set size in KiB, from the second field of /proc/self/statm. */
static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = -1;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    if (resident < 0)
        return -1;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* xorshift64 (Marsaglia); state must be non-zero. */
typedef struct { uint64_t s; } rng_t;

static void rng_seed(rng_t *r, uint64_t seed)
{
    /* splitmix-style scramble so that seeds 1, 2, 3 give unrelated streams */
    seed += 0x9e3779b97f4a7c15ull;
    seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ull;
    seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebull;
    seed ^= seed >> 31;
    r->s = seed ? seed : 1;
}

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return r->s = x;
}

/* Uniform in [0, n) (n small; the modulo bias is irrelevant here). */
static inline size_t rng_below(rng_t *r, size_t n)
{
    return (size_t)((rng_next(r) >> 11) % n);
}

/* Log-uniform size in [lo, hi) for power-of-two lo < hi: an octave
 * [2^k, 2^(k+1)) is picked uniformly, then a size uniformly inside it.
 * So each octave gets the same number of blocks (many small, few big
 * bytes-wise), the usual shape of real programs' request sizes. */
static inline size_t rng_logsize(rng_t *r, unsigned lo_shift, unsigned hi_shift)
{
    unsigned k = lo_shift + (unsigned)rng_below(r, hi_shift - lo_shift);
    size_t base = (size_t)1 << k;
    return base + rng_below(r, base);
}

static void die(const char *what)
{
    fprintf(stderr, "workloads: %s\n", what);
    exit(1);
}

static const char *g_preload_note = "";

/* If LD_PRELOAD names a library, report whether it is mapped. */
static void check_preload(void)
{
    static char note[64];
    const char *pl = getenv("LD_PRELOAD");
    if (!pl || !*pl)
        return;
    char first[PATH_MAX];
    size_t n = strcspn(pl, ": ");
    if (n >= sizeof first)
        n = sizeof first - 1;
    memcpy(first, pl, n);
    first[n] = 0;
    char real[PATH_MAX];
    const char *want = realpath(first, real) ? real : first;
    int mapped = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f) {
        char line[PATH_MAX + 256];
        while (!mapped && fgets(line, sizeof line, f)) {
            char *path = strchr(line, '/');
            if (!path)
                continue;
            path[strcspn(path, "\n")] = 0;
            mapped = strcmp(path, want) == 0;
        }
        fclose(f);
    }
    snprintf(note, sizeof note, " preload_mapped=%d", mapped);
    g_preload_note = note;
}

/* The running workload's name and argument syntax, for usage messages. */
static const char *g_name = "", *g_args = "";

/* Bad usage: say what is wrong and how to call the workload, exit 2. */
static void usage_error(const char *what, const char *arg, const char *want)
{
    fprintf(stderr, "workloads: %s %s '%s'\nusage: workloads %s %s\n",
            what, want, arg, g_name, g_args);
    exit(2);
}

/* A whole number in [min, max] (decimal); anything else is a usage error.
 * The bounds also keep the arithmetic on it from overflowing. */
static long parse_range(const char *s, const char *what, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        char want[96];
        snprintf(want, sizeof want, "must be a whole number from %ld to %ld, not", min, max);
        usage_error(what, s, want);
    }
    return v;
}

/* Which of the NULL-terminated choices s is (its index). */
static int parse_choice(const char *s, const char *what, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (!strcmp(s, choices[i]))
            return i;
    usage_error(what, s, "is not one of the choices:");
    return -1;
}

/* The end of a workload. If its data check failed (`corrupt` names what
 * changed), exit 1. Else print the result line: the keys every workload has
 * (ns_per_op is per op of one thread, ops_each of them), then its own
 * (fmt gives " key=value" pairs), then preload_mapped. */
__attribute__((format(printf, 7, 8)))
static int report(const char *corrupt, long threads, long ops, long ops_each, double secs,
                  long rss0, const char *fmt, ...)
{
    long rss1 = rss_kb();
    if (corrupt) {
        fprintf(stderr, "workloads: %s: %s (heap corruption)\n", g_name, corrupt);
        exit(1);
    }
    printf("workload=%s threads=%ld ops=%ld seconds=%.6f ns_per_op=%.2f "
           "rss_before_kb=%ld rss_after_free_kb=%ld",
           g_name, threads, ops, secs, secs * 1e9 / (double)(ops_each ? ops_each : 1), rss0, rss1);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("%s\n", g_preload_note);
    return 0;
}

/* Upper bound on op counts: far beyond any real run, and small enough that
 * threads * ops and ops * 1e9 stay exact. */
#define MAX_OPS (1L << 40)

/* Pin the calling thread to the n-th CPU it may run on (mod their count).
 * Does nothing with fewer than two allowed CPUs. */
static void pin_self(unsigned n)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) || CPU_COUNT(&all) < 2)
        return;
    n %= (unsigned)CPU_COUNT(&all);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &all) && n-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            pthread_setaffinity_np(pthread_self(), sizeof one, &one);
            return;
        }
    }
}

/* Timing of threaded workloads. The threads wait for each other at a
 * barrier, then each notes when it starts and when it ends; the run lasts
 * from the first start to the last end. (Timed in main after the barrier,
 * a run started late whenever main woke up after a worker had gone ahead:
 * by up to the whole of a short run.) */
#define MAX_THREADS 64
static pthread_barrier_t g_start;
static double g_began[MAX_THREADS], g_ended[MAX_THREADS];

static void start_together(unsigned id)
{
    pthread_barrier_wait(&g_start);
    g_began[id] = now_s();
}

static void note_end(unsigned id)
{
    g_ended[id] = now_s();
}

typedef void (*thread_fn)(unsigned id, void *arg);
typedef struct { thread_fn fn; unsigned id; void *arg; } thread_start_t;

static void *thread_main(void *v)
{
    thread_start_t *s = v;
    s->fn(s->id, s->arg);
    return NULL;
}

/* Run fn(id, arg + id * stride) in n threads (id 0..n-1, n >= 1), or in
 * the calling thread when n is 0 (as id 0); each calls start_together()
 * after its setup and note_end() when done. Returns the run's seconds. */
static double run_threads(unsigned n, thread_fn fn, void *arg, size_t stride)
{
    pthread_t tid[MAX_THREADS];
    thread_start_t start[MAX_THREADS];
    pthread_barrier_init(&g_start, NULL, n ? n : 1);
    if (!n)
        fn(0, arg);
    for (unsigned i = 0; i < n; i++) {
        start[i] = (thread_start_t){fn, i, (char *)arg + i * stride};
        if (pthread_create(&tid[i], NULL, thread_main, &start[i]))
            die("pthread_create failed");
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&g_start);
    double first = g_began[0], last = g_ended[0];
    for (unsigned i = 1; i < n; i++) {
        first = g_began[i] < first ? g_began[i] : first;
        last = g_ended[i] > last ? g_ended[i] : last;
    }
    return last - first;
}

/* ------------------------------------------------------------------ churn */

/* A churn: each thread keeps `slots` live blocks and, op after op, frees a
 * random one and puts a new block of log-uniform size in [2^lo, 2^hi) in
 * its place. churn, medium-churn, large-churn and pinned are churns of
 * different shapes. */
typedef struct {
    unsigned slots, lo_shift, hi_shift;
} churn_shape_t;

typedef struct {
    const churn_shape_t *shape;
    long ops;
    uint64_t sum;
    int bad;
} churn_arg_t;

/* Write a tag at both ends and in the middle of a block (three pages apart
 * in a large one); check it before freeing. */
static inline void tag_block(unsigned char *p, size_t n, unsigned char t)
{
    p[0] = t;
    p[n / 2] = t;
    p[n - 1] = t;
}

static inline int tag_bad(const unsigned char *p, size_t n)
{
    return p[n / 2] != p[0] || p[n - 1] != p[0];
}

static void churn_thread(unsigned id, void *varg)
{
    churn_arg_t *a = varg;
    const churn_shape_t *sh = a->shape;
    rng_t r;
    rng_seed(&r, 1000 + id);
    unsigned char *slot[sh->slots];
    size_t len[sh->slots];
    uint64_t sum = 0;
    int bad = 0;

    /* Fill the working set before the timed loop. */
    for (size_t i = 0; i < sh->slots; i++) {
        len[i] = rng_logsize(&r, sh->lo_shift, sh->hi_shift);
        slot[i] = malloc(len[i]);
        if (!slot[i])
            die("churn: malloc failed");
        tag_block(slot[i], len[i], (unsigned char)i);
    }
    start_together(id);

    for (long op = 0; op < a->ops; op++) {
        size_t i = rng_below(&r, sh->slots);
        unsigned char *old = slot[i];
        bad |= tag_bad(old, len[i]);
        sum += old[0];
        free(old);
        size_t n = rng_logsize(&r, sh->lo_shift, sh->hi_shift);
        unsigned char *p = malloc(n);
        if (!p)
            die("churn: malloc failed");
        ESCAPE(p);
        tag_block(p, n, (unsigned char)op);
        slot[i] = p;
        len[i] = n;
    }
    for (size_t i = 0; i < sh->slots; i++)
        free(slot[i]);
    note_end(id);
    a->sum = sum;
    a->bad = bad;
}

/* Run `threads` churns of the given shape together and print the line;
 * `extra` is appended to it (" key=value..."). */
static int run_churn_shape(const churn_shape_t *sh, long threads, long ops, const char *extra)
{
    churn_arg_t arg[MAX_THREADS];
    for (long t = 0; t < threads; t++)
        arg[t] = (churn_arg_t){.shape = sh, .ops = ops};
    long rss0 = rss_kb();
    double secs = run_threads((unsigned)threads, churn_thread, arg, sizeof arg[0]);
    uint64_t sum = 0;
    int bad = 0;
    for (long t = 0; t < threads; t++) {
        sum += arg[t].sum;
        bad |= arg[t].bad;
    }
    return report(bad ? "a block's tag changed" : NULL, threads, threads * ops, ops, secs, rss0,
                  " sizes=log-uniform:%zu-%zu slots=%u checksum=%llu%s",
                  (size_t)1 << sh->lo_shift, ((size_t)1 << sh->hi_shift) - 1, sh->slots,
                  (unsigned long long)sum, extra);
}

static int run_churn(int argc, char **argv)
{
    static const churn_shape_t shape = {2000, 3, 15};   /* 8 B .. 32 KiB-1 */
    long threads = parse_range(argv[0], "THREADS", 1, MAX_THREADS);
    long ops = argc > 1 ? parse_range(argv[1], "OPS_PER_THREAD", 1, MAX_OPS) : 2000000;
    return run_churn_shape(&shape, threads, ops, "");
}

/* The program's arguments, for pinned's restart. */
static char **g_argv;

/* T threads churning small blocks (256 slots, 8 B..1 KiB), with the whole
 * process on one CPU (`pinned`) or on all it may use (`free`). This is
 * glibc's lesson (seed 001): glibc sized its arena count from the affinity
 * mask, so 24 threads under `taskset -c 0` shared 8 arenas and ran 30x
 * slower. Like taskset, `pinned` sets the mask before the program starts:
 * it restarts itself on its first allowed CPU, so an allocator that counts
 * CPUs at start-up sees one as well. */
static int run_pinned(int argc, char **argv)
{
    static const churn_shape_t shape = {256, 3, 10};   /* 8 B .. 1 KiB-1 */
    static const char *const places[] = {"pinned", "free", NULL};
    long threads = parse_range(argv[0], "THREADS", 1, MAX_THREADS);
    int pinned = parse_choice(argv[1], "PLACEMENT", places) == 0;
    long ops = argc > 2 ? parse_range(argv[2], "OPS_PER_THREAD", 1, MAX_OPS) : 200000;
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask))
        die("pinned: sched_getaffinity failed");
    if (pinned && CPU_COUNT(&mask) > 1) {
        int cpu = 0;
        while (!CPU_ISSET(cpu, &mask))
            cpu++;
        CPU_ZERO(&mask);
        CPU_SET(cpu, &mask);
        if (sched_setaffinity(0, sizeof mask, &mask))
            die("pinned: sched_setaffinity failed");
        fflush(NULL);
        execv("/proc/self/exe", g_argv);
        die("pinned: cannot restart itself through /proc/self/exe");
    }
    char extra[64];
    snprintf(extra, sizeof extra, " placement=%s cpus=%d", places[!pinned], CPU_COUNT(&mask));
    return run_churn_shape(&shape, threads, ops, extra);
}

/* A power-of-two size in bytes, with an optional K, M or G suffix (binary);
 * returns its log2. */
static unsigned parse_pow2(const char *s, const char *what, unsigned min_shift, unsigned max_shift)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end && !end[1])
        shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 64;
    else if (*end)
        shift = 64;
    if (!errno && end != s && *s != '-' && shift < 64 && v && !(v & (v - 1))) {
        unsigned k = shift + (unsigned)__builtin_ctzll(v);
        if (k >= min_shift && k <= max_shift)
            return k;
    }
    char want[96];
    snprintf(want, sizeof want,
             "must be a power of two from %llu to %lluG bytes (K, M, G allowed), not",
             1ull << min_shift, 1ull << (max_shift - 30));
    usage_error(what, s, want);
    return 0;
}

static int run_medium_churn(int argc, char **argv)
{
    static churn_shape_t shape = {64, 0, 0};
    long threads = parse_range(argv[0], "THREADS", 1, MAX_THREADS);
    shape.lo_shift = parse_pow2(argv[1], "LO", 3, 30);
    shape.hi_shift = parse_pow2(argv[2], "HI", 4, 31);
    if (shape.lo_shift >= shape.hi_shift)
        usage_error("HI", argv[2], "must be above LO, not");
    long ops = argc > 3 ? parse_range(argv[3], "OPS_PER_THREAD", 1, MAX_OPS) : 100000;
    return run_churn_shape(&shape, threads, ops, "");
}

static int run_large_churn(int argc, char **argv)
{
    static const churn_shape_t shape = {16, 22, 25};   /* 4 MiB .. 32 MiB-1 */
    long threads = parse_range(argv[0], "THREADS", 1, MAX_THREADS);
    long ops = argc > 1 ? parse_range(argv[1], "OPS_PER_THREAD", 1, MAX_OPS) : 20000;
    return run_churn_shape(&shape, threads, ops, "");
}

/* ----------------------------------------------------------- realloc-grow */

#define PAGE 4096

/* The byte written at the start of the k-th 4 KiB page of a block (never 0,
 * so a page that came back zeroed is caught). */
static inline unsigned char page_tag(uint64_t seed, size_t k)
{
    return (unsigned char)(1 + (seed + k) % 251);
}

/* Seconds as a decimal number in (0, max]. */
static double parse_seconds(const char *s, const char *what, double max)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0 && v <= max)) {
        char want[96];
        snprintf(want, sizeof want, "must be a number of seconds above 0 and at most %g, not", max);
        usage_error(what, s, want);
    }
    return v;
}

/* One block grown from 16 B to MAX_MIB by realloc: +4 KiB a step (`add`)
 * or x1.5 a step (`mul`). Each new 4 KiB page gets a byte as the block
 * grows; after every step the first and the last written byte must have
 * survived (a move copies them), and at the end all of them. An allocator
 * that copies the whole block on every `add` step needs time quadratic in
 * the size, so the run stops at LIMIT_S seconds with finished=0 and the
 * size it reached. */
static int run_realloc_grow(int argc, char **argv)
{
    static const char *const steps_of[] = {"add", "mul", NULL};
    int mul = parse_choice(argv[0], "STEP", steps_of);
    size_t max = (size_t)(argc > 1 ? parse_range(argv[1], "MAX_MIB", 1, 1L << 20) : 256) << 20;
    double limit = argc > 2 ? parse_seconds(argv[2], "LIMIT_S", 3600) : 60;
    long rss0 = rss_kb();
    double t0 = now_s(), deadline = t0 + limit;
    size_t size = 16, pages = 1;
    long steps = 0, moves = 0;
    int bad = 0, finished = 1;
    unsigned char *p = malloc(size);
    if (!p)
        die("realloc-grow: malloc failed");
    p[0] = page_tag(0, 0);
    while (size < max) {
        size_t want = mul ? size + size / 2 : size + PAGE;
        if (want > max)
            want = max;
        unsigned char *q = realloc(p, want);
        if (!q)
            die("realloc-grow: realloc failed");
        moves += q != p;
        p = q;
        size = want;
        steps++;
        bad |= p[0] != page_tag(0, 0) || p[(pages - 1) * PAGE] != page_tag(0, pages - 1);
        for (; pages * PAGE < size; pages++)
            p[pages * PAGE] = page_tag(0, pages);
        if (now_s() > deadline) {
            finished = 0;
            break;
        }
    }
    for (size_t k = 0; k < pages; k++)
        bad |= p[k * PAGE] != page_tag(0, k);
    free(p);
    return report(bad ? "a byte written before a realloc changed" : NULL, 1, steps, steps,
                  now_s() - t0, rss0, " step=%s steps=%ld moves=%ld finished=%d "
                  "reached_bytes=%zu max_bytes=%zu limit_s=%g",
                  steps_of[mul], steps, moves, finished, size, max, limit);
}

/* ------------------------------------------------------------------- trim */

/* glibc BZ 17195: in a thread's arena, glibc trimmed the heap top after
 * every free of a large block, so the next malloc faulted every page in
 * again (and the syscalls show it). Two loops from that report, run in a
 * second thread (where the bug was) or in main. */

/* One byte in each 4 KiB page of a block, from page_tag(seed, page). */
static void touch_pages(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t k = 0; k * PAGE < n; k++)
        p[k * PAGE] = page_tag(seed, k);
}

static int pages_bad(const unsigned char *p, size_t n, uint64_t seed)
{
    int bad = 0;
    for (size_t k = 0; k * PAGE < n; k++)
        bad |= p[k * PAGE] != page_tag(seed, k);
    return bad;
}

typedef struct {
    long count;                /* iterations or rounds */
    int bad;
} trim_arg_t;

#define TRIM_FIXED_BYTES (48 * PAGE)

/* malloc 48 pages, touch each, free; again and again. */
static void trim_fixed_loop(unsigned id, void *varg)
{
    trim_arg_t *a = varg;
    int bad = 0;
    start_together(id);
    for (long it = 0; it < a->count; it++) {
        unsigned char *p = malloc(TRIM_FIXED_BYTES);
        if (!p)
            die("trim-fixed: malloc failed");
        touch_pages(p, TRIM_FIXED_BYTES, (uint64_t)it);
        bad |= pages_bad(p, TRIM_FIXED_BYTES, (uint64_t)it);
        free(p);
    }
    note_end(id);
    a->bad = bad;
}

#define TRIM_MIXED_BLOCKS 116

static size_t trim_mixed_size(size_t i)
{
    return (i % 58 + 1) * PAGE;
}

/* Each round: blocks of 1..58 pages (twice each), every page touched, then
 * every other block freed, then the rest. */
static void trim_mixed_loop(unsigned id, void *varg)
{
    trim_arg_t *a = varg;
    unsigned char *blk[TRIM_MIXED_BLOCKS];
    int bad = 0;
    start_together(id);
    for (long round = 0; round < a->count; round++) {
        uint64_t seed = (uint64_t)round * TRIM_MIXED_BLOCKS;
        for (size_t i = 0; i < TRIM_MIXED_BLOCKS; i++) {
            blk[i] = malloc(trim_mixed_size(i));
            if (!blk[i])
                die("trim-mixed: malloc failed");
            touch_pages(blk[i], trim_mixed_size(i), seed + i);
        }
        for (size_t half = 0; half < 2; half++) {
            for (size_t i = half; i < TRIM_MIXED_BLOCKS; i += 2) {
                bad |= pages_bad(blk[i], trim_mixed_size(i), seed + i);
                free(blk[i]);
            }
        }
    }
    note_end(id);
    a->bad = bad;
}

/* argv: [COUNT [thread|main]]; `key` names the count (iters, rounds). */
static int run_trim(int argc, char **argv, thread_fn loop, long dflt, long ops_per_count,
                    const char *key, const char *count_name)
{
    long count = argc > 0 ? parse_range(argv[0], count_name, 1, MAX_OPS / 256) : dflt;
    trim_arg_t arg = {.count = count};
    static const char *const where_of[] = {"thread", "main", NULL};
    int in_main = argc > 1 ? parse_choice(argv[1], "WHERE", where_of) : 0;
    long rss0 = rss_kb();
    double secs = run_threads(in_main ? 0 : 1, loop, &arg, 0);
    long ops = arg.count * ops_per_count;
    return report(arg.bad ? "a byte written to a page changed" : NULL, 1, ops, ops, secs, rss0,
                  " %s=%ld where=%s", key, arg.count, where_of[in_main]);
}

static int run_trim_fixed(int argc, char **argv)
{
    return run_trim(argc, argv, trim_fixed_loop, 200000, 1, "iters", "ITERS");
}

static int run_trim_mixed(int argc, char **argv)
{
    return run_trim(argc, argv, trim_mixed_loop, 20, TRIM_MIXED_BLOCKS, "rounds", "ROUNDS");
}

/* ------------------------------------------------------------------ batch */

#define BATCH 128

static int run_batch(int argc, char **argv)
{
    long rounds = argc > 0 ? parse_range(argv[0], "ROUNDS", 1, MAX_OPS / BATCH) : 200000;
    void *blk[BATCH];
    uint64_t sum = 0;
    long rss0 = rss_kb();
    double t0 = now_s();
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < BATCH; i++) {
            unsigned char *p = malloc(8);
            if (!p)
                die("batch: malloc failed");
            ESCAPE(p);
            p[0] = (unsigned char)i;
            blk[i] = p;
        }
        for (int i = 0; i < BATCH; i++) {
            sum += *(unsigned char *)blk[i];
            free(blk[i]);
        }
    }
    double secs = now_s() - t0;
    uint64_t want = (uint64_t)rounds * (BATCH * (BATCH - 1) / 2);
    long ops = rounds * BATCH;
    return report(sum != want ? "a block's byte changed" : NULL, 1, ops, ops, secs, rss0,
                  " batch=%d size=8", BATCH);
}

/* --------------------------------------------------------------- prodcons */

/* Single-producer single-consumer ring. A slot carries a batch of PC_BATCH
 * block pointers, so the threads synchronise once per batch and the time
 * goes to malloc and (remote) free rather than to the hand-off itself; one
 * pointer per slot made the run time swing 3x with scheduling on 2 cores.
 * At most RING * PC_BATCH = 1024 blocks are in flight (more in flight
 * measures cache misses more than the allocator). The producer owns `head`,
 * the consumer owns `tail`; acquire/release orders the batch contents. */
#define RING 16
#define PC_BATCH 64

typedef struct {
    _Alignas(64) _Atomic size_t head;   /* batches published; the producer writes it */
    _Alignas(64) _Atomic size_t tail;   /* batches taken; the consumer writes it */
    _Alignas(64) void *slot[RING][PC_BATCH];
} spsc_t;

static spsc_t g_ring;

/* Producer side: the slot to fill next, or NULL while the ring is full;
 * spsc_publish() hands it over. */
static inline void **spsc_slot_to_fill(spsc_t *q)
{
    size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (head - atomic_load_explicit(&q->tail, memory_order_acquire) >= RING)
        return NULL;
    return q->slot[head % RING];
}

static inline void spsc_publish(spsc_t *q)
{
    size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
    atomic_store_explicit(&q->head, head + 1, memory_order_release);
}

/* Consumer side: the oldest published slot, or NULL while the ring is
 * empty; spsc_release() gives it back. */
static inline void **spsc_slot_to_drain(spsc_t *q)
{
    size_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (atomic_load_explicit(&q->head, memory_order_acquire) == tail)
        return NULL;
    return q->slot[tail % RING];
}

static inline void spsc_release(spsc_t *q)
{
    size_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
}

/* Fill a batch with new blocks of uniform 16..512 B numbered seq, seq+1,
 * ...: the number in the first word, the size in the second (so the
 * receiver finds the end), the number's low byte in the last byte. */
static void fill_batch(void **batch, rng_t *r, uint32_t seq)
{
    for (int k = 0; k < PC_BATCH; k++, seq++) {
        size_t n = 16 + rng_below(r, 512 - 16 + 1);
        uint32_t *p = malloc(n);
        if (!p)
            die("malloc failed");
        p[0] = seq;
        p[1] = (uint32_t)n;
        ((unsigned char *)p)[n - 1] = (unsigned char)seq;
        batch[k] = p;
    }
}

/* Check and free a batch that fill_batch(batch, .., seq) filled; adds the
 * numbers to *sum and returns nonzero if a block changed or came out of
 * order. */
static int drain_batch(void **batch, uint32_t seq, uint64_t *sum)
{
    int bad = 0;
    for (int k = 0; k < PC_BATCH; k++, seq++) {
        uint32_t *p = batch[k];
        size_t n = p[1];
        bad |= p[0] != seq || n < 16 || n > 512;
        bad |= ((unsigned char *)p)[n - 1] != (unsigned char)seq;
        *sum += p[0];
        free(p);
    }
    return bad;
}

typedef struct {
    long items;                /* a multiple of PC_BATCH */
    int pin_producer, pin_consumer;   /* CPU index to pin to, or -1 */
    uint64_t sum;
    int bad;
} pc_arg_t;

/* Wait politely: spin a little, then give the core away (there are only
 * two cores and they are shared with other work). */
static inline void backoff(unsigned *spins)
{
    if (++*spins < 64)
        __asm__ volatile("pause");
    else {
        *spins = 0;
        sched_yield();
    }
}

static void producer(pc_arg_t *a)
{
    rng_t r;
    rng_seed(&r, 7);
    if (a->pin_producer >= 0)
        pin_self((unsigned)a->pin_producer);
    start_together(0);
    for (long i = 0; i < a->items; i += PC_BATCH) {
        unsigned spins = 0;
        void **batch;
        while (!(batch = spsc_slot_to_fill(&g_ring)))
            backoff(&spins);
        fill_batch(batch, &r, (uint32_t)i);
        spsc_publish(&g_ring);
    }
    note_end(0);
}

static void consumer(pc_arg_t *a)
{
    if (a->pin_consumer >= 0)
        pin_self((unsigned)a->pin_consumer);
    start_together(1);
    uint64_t sum = 0;
    int bad = 0;
    for (long i = 0; i < a->items; i += PC_BATCH) {
        unsigned spins = 0;
        void **batch;
        while (!(batch = spsc_slot_to_drain(&g_ring)))
            backoff(&spins);
        bad |= drain_batch(batch, (uint32_t)i, &sum);
        spsc_release(&g_ring);
    }
    note_end(1);
    a->sum = sum;
    a->bad = bad;
}

/* Thread 0 produces, thread 1 consumes. */
static void prodcons_thread(unsigned id, void *a)
{
    (id ? consumer : producer)(a);
}

static int run_prodcons(int argc, char **argv)
{
    long items = argc > 0 ? parse_range(argv[0], "ITEMS", 1, UINT32_MAX - PC_BATCH) : 4000000;
    /* Where the two threads run. On this project's 2 shared vCPUs the
     * choice decides the result: left to the scheduler (`free`) the run
     * lands in one of two regimes from run to run, up to 5x apart; with one
     * thread per CPU (`split`) every block's cache lines cross cores and
     * the time swings with the neighbours' load; on one CPU (`same`, the
     * default) the threads take turns a ring-full at a time and the time is
     * steady within a few percent, the remote-free path still taken for
     * every block. */
    const char *placement = argc > 1 ? argv[1] : "same";
    static const char *const places[] = {"same", "split", "free", NULL};
    static const int pin_p_of[] = {0, 0, -1}, pin_c_of[] = {0, 1, -1};
    int pl = parse_choice(placement, "PLACEMENT", places);
    int pin_p = pin_p_of[pl], pin_c = pin_c_of[pl];
    items = (items + PC_BATCH - 1) / PC_BATCH * PC_BATCH;
    pc_arg_t arg = {.items = items, .pin_producer = pin_p, .pin_consumer = pin_c};
    long rss0 = rss_kb();
    double secs = run_threads(2, prodcons_thread, &arg, 0);
    int bad = arg.bad || arg.sum != (uint64_t)items * (uint64_t)(items - 1) / 2;
    return report(bad ? "a block arrived changed or out of order" : NULL, 2, items, items,
                  secs, rss0, " sizes=uniform:16-512 ring=%dx%d placement=%s",
                  RING, PC_BATCH, placement);
}

/* ------------------------------------------------------------------- ring */

/* T threads in a ring: thread t mallocs blocks and sends them, a batch at a
 * time, through queue t to thread t+1, which frees them, so every free is
 * a remote free and every thread is both a producer and a consumer. A
 * thread alternates between filling a batch (while its outgoing queue has
 * room) and draining one (while its incoming queue has one), and backs off
 * politely when it can do neither. */
#define RING_MAX_THREADS 16
static spsc_t g_queue[RING_MAX_THREADS];

typedef struct {
    unsigned threads;
    long items;                /* per thread, a multiple of PC_BATCH */
    int pin;                   /* 0: all on the first CPU, 1: thread t on CPU t, -1: not pinned */
    uint64_t sum;
    int bad;
} ring_arg_t;

static void ring_thread(unsigned id, void *varg)
{
    ring_arg_t *a = varg;
    if (a->pin >= 0)
        pin_self(a->pin ? id : 0);
    rng_t r;
    rng_seed(&r, 7 + id);
    spsc_t *out = &g_queue[id], *in = &g_queue[(id + a->threads - 1) % a->threads];
    long sent = 0, got = 0;
    uint64_t sum = 0;
    int bad = 0;
    unsigned spins = 0;
    start_together(id);
    while (sent < a->items || got < a->items) {
        int moved = 0;
        void **batch;
        if (sent < a->items && (batch = spsc_slot_to_fill(out))) {
            fill_batch(batch, &r, (uint32_t)sent);
            spsc_publish(out);
            sent += PC_BATCH;
            moved = 1;
        }
        if (got < a->items && (batch = spsc_slot_to_drain(in))) {
            bad |= drain_batch(batch, (uint32_t)got, &sum);
            spsc_release(in);
            got += PC_BATCH;
            moved = 1;
        }
        if (moved)
            spins = 0;
        else
            backoff(&spins);
    }
    note_end(id);
    a->sum = sum;
    a->bad = bad;
}

static int run_ring(int argc, char **argv)
{
    long threads = parse_range(argv[0], "THREADS", 2, RING_MAX_THREADS);
    long items = argc > 1 ? parse_range(argv[1], "ITEMS_PER_THREAD", 1, UINT32_MAX - PC_BATCH)
                          : 1000000;
    /* Placement: see bench/README.md. `same` (all threads on one CPU, taking
     * turns) is the steady one on a shared 2-CPU machine, as for prodcons. */
    const char *placement = argc > 2 ? argv[2] : "same";
    static const char *const places[] = {"same", "split", "free", NULL};
    static const int pin_of[] = {0, 1, -1};
    int pin = pin_of[parse_choice(placement, "PLACEMENT", places)];
    items = (items + PC_BATCH - 1) / PC_BATCH * PC_BATCH;
    ring_arg_t arg[RING_MAX_THREADS];
    for (long t = 0; t < threads; t++)
        arg[t] = (ring_arg_t){.threads = (unsigned)threads, .items = items, .pin = pin};
    long rss0 = rss_kb();
    double secs = run_threads((unsigned)threads, ring_thread, arg, sizeof arg[0]);
    int bad = 0;
    for (long t = 0; t < threads; t++)
        bad |= arg[t].bad || arg[t].sum != (uint64_t)items * (uint64_t)(items - 1) / 2;
    return report(bad ? "a block arrived changed or out of order" : NULL, threads,
                  threads * items, items, secs, rss0,
                  " sizes=uniform:16-512 ring=%dx%d placement=%s", RING, PC_BATCH, placement);
}

/* -------------------------------------------------------------- memreturn */

static int run_memreturn(int argc, char **argv)
{
    long mib = argc > 0 ? parse_range(argv[0], "MIB", 1, 1L << 20) : 200;
    long settle_ms = argc > 1 ? parse_range(argv[1], "SETTLE_MS", 0, 3600000) : 0;
    size_t target = (size_t)mib << 20;
    size_t big_bytes = target / 10;              /* ~10% in 1 MiB blocks */
    size_t nbig = big_bytes >> 20;
    rng_t r;
    rng_seed(&r, 42);

    /* The pointer table is allocated (with the allocator under test) before
     * the first RSS reading and freed after the last one. Small blocks
     * average ~8 KiB, so a quarter of that per entry leaves ample slack;
     * the RNG is fixed, so the count is the same every run. */
    size_t cap = target / 2048 + nbig + 16;
    void **blk = malloc(cap * sizeof *blk);
    size_t *len = malloc(cap * sizeof *len);
    if (!blk || !len)
        die("memreturn: malloc failed");
    memset(blk, 0, cap * sizeof *blk);
    memset(len, 0, cap * sizeof *len);

    long rss_before = rss_kb();
    double t0 = now_s();
    size_t n = 0, bytes = 0, big_done = 0;
    size_t big_every = nbig ? (target - big_bytes) / nbig : 0;
    size_t next_big = big_every;
    while (bytes < target) {
        if (n == cap)
            die("memreturn: pointer table too small");
        size_t sz;
        if (big_done < nbig && bytes >= next_big) {
            sz = (size_t)1 << 20;
            big_done++;
            next_big += big_every;
        } else {
            sz = rng_logsize(&r, 4, 16);                   /* 16 B .. 64 KiB-1 */
        }
        unsigned char *p = malloc(sz);
        if (!p)
            die("memreturn: malloc failed");
        memset(p, (int)(n & 0xff), sz);                  /* touch every page */
        blk[n] = p;
        len[n] = sz;
        n++;
        bytes += sz;
    }
    long rss_peak = rss_kb();
    double t1 = now_s();

    /* Free in a random order (Fisher-Yates shuffle of the table first). */
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rng_below(&r, i + 1);
        void *tp = blk[i]; blk[i] = blk[j]; blk[j] = tp;
        size_t tl = len[i]; len[i] = len[j]; len[j] = tl;
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = blk[i];
        bad |= p[0] != p[len[i] - 1];
        free(p);
    }
    double t2 = now_s();
    long rss_after = rss_kb();
    if (bad)
        die("memreturn: a block's bytes changed (heap corruption)");

    long rss_settled = -1;
    if (settle_ms) {
        /* Optional: idle, then one small malloc/free so that an allocator
         * that returns memory lazily (on its next operation) gets a chance. */
        struct timespec ts = {settle_ms / 1000, (settle_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        void *p = malloc(32);
        ESCAPE(p);
        free(p);
        rss_settled = rss_kb();
    }
    free(blk);
    free(len);

    printf("workload=memreturn threads=1 ops=%zu seconds=%.6f alloc_seconds=%.6f "
           "free_seconds=%.6f bytes=%zu big_blocks=%zu rss_before_kb=%ld "
           "rss_peak_kb=%ld rss_after_free_kb=%ld after_free_pct_of_peak=%.1f",
           n, t2 - t0, t1 - t0, t2 - t1, bytes, big_done, rss_before, rss_peak,
           rss_after, rss_peak > 0 ? 100.0 * (double)rss_after / (double)rss_peak : 0.0);
    if (settle_ms)
        printf(" settle_ms=%ld rss_after_settle_kb=%ld", settle_ms, rss_settled);
    printf(" sizes=log-uniform:16-65535+1MiB%s\n", g_preload_note);
    return 0;
}

/* ------------------------------------------------------------------- main */

/* Each workload with its argument syntax and how many arguments it takes;
 * main checks the count, the workload checks the values. */
static const struct {
    const char *name, *args;
    int min_args, max_args;
    int (*run)(int argc, char **argv);
} WORKLOADS[] = {
    {"churn", "THREADS [OPS_PER_THREAD]", 1, 2, run_churn},
    {"batch", "[ROUNDS]", 0, 1, run_batch},
    {"prodcons", "[ITEMS [same|split|free]]", 0, 2, run_prodcons},
    {"memreturn", "[MIB [SETTLE_MS]]", 0, 2, run_memreturn},
    {"medium-churn", "THREADS LO HI [OPS_PER_THREAD]", 3, 4, run_medium_churn},
    {"large-churn", "THREADS [OPS_PER_THREAD]", 1, 2, run_large_churn},
    {"ring", "THREADS [ITEMS_PER_THREAD [same|split|free]]", 1, 3, run_ring},
    {"trim-fixed", "[ITERS [thread|main]]", 0, 2, run_trim_fixed},
    {"trim-mixed", "[ROUNDS [thread|main]]", 0, 2, run_trim_mixed},
    {"pinned", "THREADS pinned|free [OPS_PER_THREAD]", 2, 3, run_pinned},
    {"realloc-grow", "add|mul [MAX_MIB [LIMIT_S]]", 1, 3, run_realloc_grow},
};
#define NWORKLOADS (sizeof WORKLOADS / sizeof WORKLOADS[0])

int main(int argc, char **argv)
{
    size_t w = 0;
    while (argc >= 2 && w < NWORKLOADS && strcmp(argv[1], WORKLOADS[w].name))
        w++;
    if (argc < 2 || w == NWORKLOADS) {
        if (argc >= 2)
            fprintf(stderr, "workloads: unknown workload '%s'\n", argv[1]);
        for (size_t i = 0; i < NWORKLOADS; i++)
            fprintf(stderr, "%s workloads %s %s\n", i ? "      " : "usage:",
                    WORKLOADS[i].name, WORKLOADS[i].args);
        return 2;
    }
    g_name = WORKLOADS[w].name;
    g_args = WORKLOADS[w].args;
    int nargs = argc - 2;
    if (nargs < WORKLOADS[w].min_args || nargs > WORKLOADS[w].max_args) {
        fprintf(stderr, "workloads: %s takes %d to %d arguments, not %d\nusage: workloads %s %s\n",
                g_name, WORKLOADS[w].min_args, WORKLOADS[w].max_args, nargs, g_name, g_args);
        return 2;
    }
    check_preload();
    g_argv = argv;
    return WORKLOADS[w].run(nargs, argv + 2);
}
