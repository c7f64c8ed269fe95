# vigil — see README.md for every target.
CC ?= gcc
# VALGRIND=1: vigil describes its blocks to memcheck (src/annotate.h), in its
# own build directory.
ifeq ($(VALGRIND),1)
BUILD ?= build-valgrind
ANNOTATE_CFLAGS := -DVIGIL_VALGRIND
endif
BUILD ?= build
OPT ?= -O2
WERROR ?=
WARN := -Wall -Wextra -Wsign-compare -Wconversion -Wshadow -Wstrict-prototypes $(if $(WERROR),-Werror)
CFLAGS_LIB := -std=gnu11 $(OPT) -g -fPIC -fvisibility=hidden -pthread $(WARN) \
  -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free \
  -fno-plt -ftls-model=initial-exec $(ANNOTATE_CFLAGS) $(EXTRA_CFLAGS)
SRCS := $(wildcard src/*.c)
HDRS := $(wildcard src/*.h src/*.def)
STD_OBJS := $(patsubst src/%.c,$(BUILD)/obj/std/%.o,$(SRCS))
PFX_OBJS := $(patsubst src/%.c,$(BUILD)/obj/pfx/%.o,$(SRCS))
DEPS_STAMP := $(BUILD)/.deps-build

.PHONY: all check clean deps bench tests
all: $(BUILD)/libvigil.so $(BUILD)/libvigil.a $(BUILD)/libvigil_prefixed.a $(BUILD)/vigil-ops

# Install what the build needs (no-op when present); CI and fresh machines.
$(DEPS_STAMP): ci/deps.sh
	@bash ci/deps.sh build
	@mkdir -p $(@D) && touch $@

$(BUILD)/obj/std/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_LIB) -c $< -o $@
$(BUILD)/obj/pfx/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_LIB) -DVIGIL_PREFIX -c $< -o $@

# C++'s operator new throws std::bad_alloc through cxx.c's frames.
$(BUILD)/obj/std/cxx.o: CFLAGS_LIB += -fexceptions

$(BUILD)/libvigil.so: $(STD_OBJS)
	$(CC) -shared -pthread -Wl,-soname,libvigil.so -Wl,-z,now -o $@ $^
$(BUILD)/libvigil.a: $(STD_OBJS)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libvigil_prefixed.a: $(PFX_OBJS)
	rm -f $@ && ar rcs $@ $^

include tests/tests.mk
include bench/bench.mk
include fuzz/ops.mk
include fuzz/fuzz.mk
include qemu-targets/qemu.mk
include fuzz/trace/trace.mk

# Proof that the fuzz machinery finds bugs: every fuzz/mutants/*.patch must be
# caught by the corpus replay or a bounded (60 s) libFuzzer run; prints the
# kill matrix.  `make check` runs the replay-only form (tests/fuzz_selftest.sh).
fuzz-selftest: | check-deps
	@bash ci/deps.sh fuzz
	@BUILD=$(BUILD) CC=$(CC) bash fuzz/selftest.sh
.PHONY: fuzz-selftest

# ThreadSanitizer builds of the threaded target and the remote-free stress.
tsan-check: | check-deps
	@BUILD=$(BUILD) bash ci/tsan-check.sh
.PHONY: tsan-check

# Memcheck over vigil built VALGRIND=1 (client requests, src/annotate.h):
# the unit tests and the corpus replay with zero errors, the demonstration
# of user errors (tests/valgrind_demo.sh); ci/valgrind-check.sh.
valgrind-check:
	@bash ci/deps.sh valgrind
	@bash ci/valgrind-check.sh
.PHONY: valgrind-check

# llvm-cov line and branch coverage of src/ from the tests and the corpus
# replay (ci/coverage.sh): build-cov/coverage/index.html and summary.txt.
coverage: | check-deps
	@bash ci/coverage.sh
.PHONY: coverage

# ci/oss-fuzz/build.sh as OSS-Fuzz runs it (libFuzzer+ASan, libFuzzer+UBSan,
# AFL+++ASan), each in a throw-away copy of the tracked files, then $OUT
# checked as check_build does and each target fuzzed SECONDS (10) seconds.
OSS_FUZZ_SECONDS ?= 10
oss-fuzz-check:
	@bash ci/deps.sh oss-fuzz
	@bash ci/oss-fuzz/check.sh -s $(OSS_FUZZ_SECONDS) $(OSS_FUZZ_CONFIGS)
.PHONY: oss-fuzz-check

# The git pre-commit hook (ci/pre-commit): build, corpus replay, a short
# libFuzzer run of the targets the staged change can affect, and a check that
# every mutant patch still applies.  Installed as a one-line script that runs
# the tree's own ci/pre-commit, so it stays current.
install-hooks:
	@hooks=$$(git rev-parse --git-path hooks) && mkdir -p "$$hooks" && \
	 if [ -e "$$hooks/pre-commit" ] && ! grep -q 'ci/pre-commit' "$$hooks/pre-commit"; then \
	   echo "install-hooks: $$hooks/pre-commit exists and is not vigil's; move it away first" >&2; exit 1; fi && \
	 printf '#!/bin/sh\n# installed by make install-hooks\nexec bash "$$(git rev-parse --show-toplevel)/ci/pre-commit" "$$@"\n' \
	   >"$$hooks/pre-commit" && chmod +x "$$hooks/pre-commit" && \
	 echo "install-hooks: $$hooks/pre-commit runs ci/pre-commit (VIGIL_FUZZ_SECONDS=30, VIGIL_SKIP_FUZZ=1, VIGIL_SKIP_HOOK=1)"
.PHONY: install-hooks

clean:
	rm -rf build build-*
