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

.PHONY: bench bench-quick bench-deps
