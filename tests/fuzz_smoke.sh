#!/usr/bin/env bash
# The fuzzers' smoke run in `make check`: every target under libFuzzer
# (ASan+UBSan, coverage of vigil's own code) for 200 inputs from seed 1
# (FUZZ_SMOKE_RUNS), from the seeds: a fixed amount of work, not a time.
# Any crash fails the test; the summary table shows execs/s and coverage.
set -euo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" fuzz-smoke
