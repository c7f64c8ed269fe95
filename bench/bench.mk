# Benchmarks: `make bench` (about 10 minutes on the 2-core machine) and
# `make bench-quick` (a smoke run, 30-50 s). See bench/README.md. RUNS=N
# changes the number of interleaved runs; ALLOCATORS=glibc,vigil restricts
# the set.
BENCH_BIN := $(BUILD)/bench/workloads
BENCH_ENV := BUILD=$(BUILD) $(if $(RUNS),RUNS=$(RUNS)) $(if $(ALLOCATORS),ALLOCATORS=$(ALLOCATORS)) $(if $(HARDEN),HARDEN=$(HARDEN))

$(BENCH_BIN): bench/workloads.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -pthread -Wall -Wextra -o $@ $<

bench-deps:
	@bash ci/deps.sh bench

bench: bench-deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	$(BENCH_ENV) python3 bench/run.py

bench-quick: bench-deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	$(BENCH_ENV) python3 bench/run.py --quick

# The fuzz targets' executions per second (bench/fuzz_bench.py): the replay
# driver over the seeds, libFuzzer+ASan for FUZZ_BENCH_SECONDS (60) each
# from the seeds, and the floor of forks, threads and page faults on this
# machine.  FUZZ_BENCH_KEEP=DIR keeps each libFuzzer run's working corpus
# and logs in DIR/<target>, to find the inputs that cost most.
FUZZ_BENCH_SECONDS ?= 60
$(BUILD)/bench/fuzz_floor: bench/fuzz_floor.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -pthread -Wall -Wextra -o $@ $<

fuzz-bench:
	@bash ci/deps.sh fuzz
	+@$(MAKE) --no-print-directory fuzz-replay-build fuzz-build-libfuzzer $(BUILD)/bench/fuzz_floor $(BUILD)/vigil-ops
	BUILD=$(BUILD) python3 bench/fuzz_bench.py --seconds $(FUZZ_BENCH_SECONDS) $(if $(RUNS),--runs $(RUNS)) \
	  $(if $(FUZZ_BENCH_KEEP),--keep $(FUZZ_BENCH_KEEP)) $(FUZZ_TARGETS)

.PHONY: bench bench-quick bench-deps fuzz-bench
