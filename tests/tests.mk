# Tests: `make check` builds and runs all of them through tests/run.sh.
#   tests/unit_*.c   white-box, linked with libvigil_prefixed.a (vigil_ names)
#   tests/api_*.c    black-box against glibc in the same process (prefixed)
#   tests/seed_*.c   seed-lesson tests, linked statically with libvigil.a, so
#                    vigil is the process's malloc (libc's internal calls
#                    included) and its internals (syscall counters) are visible
#   tests/*.sh       scripted tests (preload smoke, probes, docs, variants);
#                    cost_warm.c is a plain program that cost_warm.sh runs
# Exit status: 0 pass, 77 skipped (reported as skipped), anything else fails.
TEST_CFLAGS := -std=gnu11 -O1 -g -pthread -Isrc -Wall -Wextra $(if $(WERROR),-Werror) $(ANNOTATE_CFLAGS) $(EXTRA_CFLAGS)
UNIT_SRCS := $(wildcard tests/unit_*.c)
API_SRCS := $(wildcard tests/api_*.c)
SEED_SRCS := $(wildcard tests/seed_*.c)
TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRCS) $(API_SRCS)) \
             $(patsubst tests/%.c,$(BUILD)/tests/%,$(SEED_SRCS))
TEST_HELPERS := $(BUILD)/tests/tunables_table $(BUILD)/tests/cost_warm

$(BUILD)/tests/unit_%: tests/unit_%.c tests/testlib.h $(BUILD)/libvigil_prefixed.a
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -DVIGIL_PREFIX -o $@ $< $(BUILD)/libvigil_prefixed.a
# The reference model's own test links the model itself (diff/).
$(BUILD)/tests/unit_model: tests/unit_model.c tests/testlib.h diff/model.c diff/cost.c $(wildcard diff/*.h) \
    fuzz/program.h $(BUILD)/libvigil_prefixed.a
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Ifuzz -Idiff -DVIGIL_PREFIX -o $@ $< diff/model.c diff/cost.c $(BUILD)/libvigil_prefixed.a
$(BUILD)/tests/api_%: tests/api_%.c tests/testlib.h $(BUILD)/libvigil_prefixed.a
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -DVIGIL_PREFIX -o $@ $< $(BUILD)/libvigil_prefixed.a
$(BUILD)/tests/seed_%: tests/seed_%.c tests/testlib.h $(BUILD)/libvigil.a
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $< -Wl,--whole-archive $(BUILD)/libvigil.a -Wl,--no-whole-archive
$(BUILD)/tests/tunables_table: tests/tunables_table.c $(BUILD)/libvigil_prefixed.a
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -DVIGIL_PREFIX -o $@ $< $(BUILD)/libvigil_prefixed.a

# A plain program (the standard malloc API): cost_warm.sh preloads vigil.
$(BUILD)/tests/cost_warm: tests/cost_warm.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -pthread -Wall -Wextra $(if $(WERROR),-Werror) -o $@ $<

tests: all $(TEST_BINS) $(TEST_HELPERS)

# The test command.  CHECK_FILTER=regex runs a subset.
check: | check-deps
	@$(MAKE) --no-print-directory tests
	@BUILD=$(BUILD) CC=$(CC) bash tests/run.sh '$(CHECK_FILTER)'

check-deps:
	@bash ci/deps.sh check
.PHONY: check-deps
