#!/usr/bin/env bash
# The fuzzers' smoke run in `make check`: every target under libFuzzer
# (ASan+UBSan, coverage of vigil's own code) for 5 s from the seeds.  Any
# crash fails the test; the summary table shows execs/s and coverage.
set -euo pipefail
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" fuzz-smoke
