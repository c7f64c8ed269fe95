# The per-target sanitizer options of the libFuzzer builds, in one place:
# sourced (from the top of the tree) by fuzz/run.sh, qemu-targets/fuzz.sh
# and ci/oss-fuzz/build.sh, which writes them into the .options files.

# LeakSanitizer: on for the sequential targets, where a leak is a harness bug
# (the oracle must give back every glibc block, or long runs die at the RSS
# limit).  Off for threads and fork: libFuzzer decides to run a leak check
# when an input's malloc and free counts differ, and there they differ
# without a leak (fork's background threads allocate all the time; glibc
# keeps thread stacks and TLS in caches), so every input would pay for a
# stop-the-world scan that finds nothing.  vigil's own memory comes from mmap,
# which LSan does not track either way: vigil's leaks are the model's job.
# (LSan cannot run under QEMU: qemu-targets/fuzz.sh turns it off for all.)
fuzz_leaks() { case $1 in threads | fork) echo 0 ;; *) echo 1 ;; esac; }

# ASan's quarantine of freed heap blocks, in MB (empty: ASan's 256 MB).  It
# stays resident, and a fork copies the page tables of all that is resident:
# in the targets that fork per op or per input, a 60 s libFuzzer run of fork
# grew to 421 MB and made 10 execs/s; with 16 MB it stayed at 86 MB and made
# 23 (corrupt: 106 -> 65 MB, its rate within run-to-run noise; 2026-12-05).
# It guards the harness's own heap (libFuzzer, the oracle); vigil's blocks
# are not in it.
fuzz_quarantine_mb() { case $1 in fork | corrupt) echo 16 ;; esac; }

# ASAN_OPTIONS for target $1 with LeakSanitizer set to $2.  Always
# allocator_may_return_null=1: the glibc comparison asks the process's
# malloc (ASan's, in these builds) for sizes up to SIZE_MAX on purpose and
# expects NULL and ENOMEM, not an ASan report.
fuzz_asan_options() {
  local q
  q=$(fuzz_quarantine_mb "$1")
  echo "allocator_may_return_null=1:detect_leaks=$2${q:+:quarantine_size_mb=$q}"
}
