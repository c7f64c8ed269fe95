#!/usr/bin/env bash
# The short form of `make fuzz-selftest`: every mutant in fuzz/mutants/ must
# be killed by the corpus replay alone (no fuzzing time).
set -uo pipefail
BUILD=${BUILD:-build} bash fuzz/selftest.sh --quick
