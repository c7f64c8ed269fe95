# The QEMU user-mode matrix (qemu-targets/README.md).
#
#   make qemu-check [ARCHES="aarch64 ppc64le ..."] [NATIVE=1]   (default: all six)
#
# For each arch (a file qemu-targets/<arch>): cross-builds, -static, the
# prefixed library, the unit tests, tests/seed_large_pages.c and the replay
# drivers of every fuzz target into $(BUILD)/qemu/<arch>/, then runs them
# under qemu-<arch> at each page size of the target, and prints a table.
# qemu-targets/run.sh does the work; the build itself is the rule set below,
# which run.sh calls as `make -f qemu-targets/qemu.mk QEMU_BUILD_ARCH=<arch>`
# with the target's compiler and flags.
QEMU_MK := $(lastword $(MAKEFILE_LIST))
QEMU_DIR := $(patsubst %/,%,$(dir $(QEMU_MK)))
BUILD ?= build
QEMU_ALL := aarch64 ppc64le s390x riscv64 i686 armhf
ARCHES ?= $(QEMU_ALL)

# NATIVE=1: the same matrix on a real host of the arch, without QEMU (run.sh);
# ARCHES then defaults to the host's arch, and only the host's compiler and
# libc are needed.
QEMU_NATIVE := $(filter-out 0,$(NATIVE))
qemu-check:
	@bash ci/deps.sh $(if $(QEMU_NATIVE),build,qemu)
	@BUILD=$(BUILD) NATIVE=$(QEMU_NATIVE) bash $(QEMU_DIR)/run.sh \
	  $(if $(and $(QEMU_NATIVE),$(filter file,$(origin ARCHES))),,$(ARCHES))
.PHONY: qemu-check

ifdef QEMU_BUILD_ARCH
# ---- one arch's cross build (set by run.sh: QEMU_CC, QEMU_EXTRA_CFLAGS) ----
QEMU_OUT := $(BUILD)/qemu/$(QEMU_BUILD_ARCH)
QEMU_FUZZ_TARGETS := $(shell sed -n 's/^FUZZ_TARGETS *:= *//p' fuzz/fuzz.mk)
QEMU_UNITS := unit_core unit_modules unit_harden unit_threads
QEMU_COMMON := -std=gnu11 -O1 -g -pthread -Wall -Wextra -DVIGIL_PREFIX -DVIGIL_NO_SDT \
  -Isrc $(QEMU_EXTRA_CFLAGS)
# The library's own flags (Makefile's CFLAGS_LIB), static and without -Werror.
QEMU_LIB_CFLAGS := $(QEMU_COMMON) -fvisibility=hidden -fno-builtin-malloc -fno-builtin-calloc \
  -fno-builtin-realloc -fno-builtin-free -ftls-model=initial-exec
QEMU_FUZZ_CFLAGS := $(QEMU_COMMON) -Ifuzz -Idiff
QEMU_LDFLAGS := -static -pthread $(QEMU_EXTRA_CFLAGS)
QEMU_HDRS := $(wildcard src/*.h src/*.def fuzz/*.h diff/*.h tests/testlib.h)
QEMU_LIB := $(QEMU_OUT)/libvigil_prefixed.a
QEMU_LIB_OBJS := $(patsubst src/%.c,$(QEMU_OUT)/obj/src/%.o,$(wildcard src/*.c))
QEMU_SUPPORT_OBJS := $(patsubst %.c,$(QEMU_OUT)/obj/%.o,fuzz/replay.c fuzz/program.c $(wildcard diff/*.c))
QEMU_BINS := $(addprefix $(QEMU_OUT)/tests/,$(QEMU_UNITS) seed_large_pages) \
  $(addprefix $(QEMU_OUT)/replay/,$(QEMU_FUZZ_TARGETS))
QEMU_OBJS := $(QEMU_LIB_OBJS) $(QEMU_SUPPORT_OBJS) \
  $(patsubst %,$(QEMU_OUT)/obj/tests/%.o,$(QEMU_UNITS) seed_large_pages) \
  $(patsubst %,$(QEMU_OUT)/obj/fuzz/%.o,$(QEMU_FUZZ_TARGETS))
# Kept between runs (they are intermediate files of the pattern rules).
.SECONDARY: $(QEMU_OBJS)
# Every object depends on this file, rewritten (while the makefile is read,
# before any rule is considered) only when the compiler or the flags change,
# so a change of either rebuilds everything.
QEMU_STAMP := $(QEMU_OUT)/flags
QEMU_SIG := $(strip $(QEMU_CC) | $(QEMU_LIB_CFLAGS) | $(QEMU_FUZZ_CFLAGS) | $(QEMU_LDFLAGS))
ifneq ($(strip $(shell cat $(QEMU_STAMP) 2>/dev/null)),$(QEMU_SIG))
$(shell mkdir -p $(QEMU_OUT) && printf '%s\n' '$(QEMU_SIG)' >$(QEMU_STAMP))
endif

qemu-build: $(QEMU_BINS)
.PHONY: qemu-build

$(QEMU_OUT)/obj/src/%.o: src/%.c $(QEMU_HDRS) $(QEMU_STAMP)
	@mkdir -p $(@D)
	$(QEMU_CC) $(QEMU_LIB_CFLAGS) -c $< -o $@
$(QEMU_LIB): $(QEMU_LIB_OBJS)
	rm -f $@ && $(QEMU_TRIPLE)-ar rcs $@ $^
$(QEMU_OUT)/obj/%.o: %.c $(QEMU_HDRS) $(QEMU_STAMP)
	@mkdir -p $(@D)
	$(QEMU_CC) $(QEMU_FUZZ_CFLAGS) -c $< -o $@
$(QEMU_OUT)/tests/%: $(QEMU_OUT)/obj/tests/%.o $(QEMU_LIB)
	@mkdir -p $(@D)
	$(QEMU_CC) $(QEMU_LDFLAGS) -o $@ $^
$(QEMU_OUT)/replay/%: $(QEMU_OUT)/obj/fuzz/%.o $(QEMU_SUPPORT_OBJS) $(QEMU_LIB)
	@mkdir -p $(@D)
	$(QEMU_CC) $(QEMU_LDFLAGS) -o $@ $^
endif

# ==== qemu-fuzz: fuzzing on the QEMU targets (qemu-targets/fuzz.sh) ========
#   make qemu-fuzz [SECONDS=60 | EXECS=N] [SEED=S] [ARCHES="..."] [FUZZ_TARGETS="..."]
# aarch64: libFuzzer (coverage-guided, ASan+UBSan) under qemu-aarch64; every
# other arch: the replay driver's mutation mode (replay -M) under qemu-<arch>.
# SECONDS is per (arch, target) run, as in `make fuzz`.  EXECS instead: a
# fixed count of executions a run, from SEED (default 1) and the seeds only:
# the same inputs every time (tests/qemu_fuzz_smoke.sh).  ARCHES defaults to
# all six targets here (qemu-check's default is two).  Work, corpora and
# crashes go to $(BUILD)/qemu-fuzz/.  See qemu-targets/README.md.
QEMU_FUZZ_ARCHES = $(ARCHES)

# (the arm64 clang runtime only when aarch64 is among the arches; SECONDS
# has fuzz.mk's default, so only one given by the user clashes with EXECS)
qemu-fuzz:
	$(if $(and $(filter command line environment,$(origin SECONDS)),$(EXECS)),$(error make qemu-fuzz: SECONDS= or EXECS=, not both: a run is timed or counted))
	@bash ci/deps.sh $(if $(filter aarch64,$(QEMU_FUZZ_ARCHES)),qemu-fuzz,qemu)
	@BUILD=$(BUILD) bash $(QEMU_DIR)/fuzz.sh $(if $(EXECS),-n '$(EXECS)',-s '$(or $(SECONDS),60)') \
	  $(if $(SEED),-S '$(SEED)') $(if $(FUZZ_TARGETS),-t "$(FUZZ_TARGETS)") $(QEMU_FUZZ_ARCHES)
.PHONY: qemu-fuzz

# The aarch64 libFuzzer binaries, $(BUILD)/qemu-fuzz/build-aarch64/bin/<t>:
# the objects of fuzz.mk's libFuzzer engine (the same flags, vigil's own
# sources with coverage and ASan+UBSan too), built by clang for
# aarch64-linux-gnu against the cross libc, and linked dynamically (ASan has
# no static runtime): qemu-aarch64 -L /usr/aarch64-linux-gnu runs them.
# fuzz.sh builds them through the top Makefile, which includes fuzz.mk.
ifdef FUZZ_LIB_CFLAGS
QEMU_LF_OUT := $(BUILD)/qemu-fuzz/build-aarch64
QEMU_LF_CC := $(FUZZ_CLANG) --target=aarch64-linux-gnu
QEMU_LF_FLAGS := -DVIGIL_NO_SDT $(FUZZ_SAN) -fsanitize=fuzzer-no-link
QEMU_LF_BINS := $(addprefix $(QEMU_LF_OUT)/bin/,$(FUZZ_TARGETS))
QEMU_LF_LIB := $(QEMU_LF_OUT)/libvigil_prefixed.a
QEMU_LF_SUPPORT := $(patsubst %.c,$(QEMU_LF_OUT)/obj/%.o,$(FUZZ_SUPPORT))
.SECONDARY: $(patsubst src/%.c,$(QEMU_LF_OUT)/obj/vigil/%.o,$(FUZZ_VIGIL_SRCS)) $(QEMU_LF_SUPPORT) \
  $(patsubst %,$(QEMU_LF_OUT)/obj/fuzz/%.o,$(FUZZ_TARGETS))

qemu-fuzz-build-aarch64: $(QEMU_LF_BINS)
.PHONY: qemu-fuzz-build-aarch64

$(QEMU_LF_OUT)/obj/vigil/%.o: src/%.c $(HDRS)
	@mkdir -p $(@D)
	$(QEMU_LF_CC) $(FUZZ_LIB_CFLAGS) $(QEMU_LF_FLAGS) -c $< -o $@
$(QEMU_LF_LIB): $(patsubst src/%.c,$(QEMU_LF_OUT)/obj/vigil/%.o,$(FUZZ_VIGIL_SRCS))
	rm -f $@ && aarch64-linux-gnu-ar rcs $@ $^
$(QEMU_LF_OUT)/obj/%.o: %.c $(FUZZ_HDRS)
	@mkdir -p $(@D)
	$(QEMU_LF_CC) $(FUZZ_CFLAGS) $(QEMU_LF_FLAGS) -c $< -o $@
$(QEMU_LF_BINS): $(QEMU_LF_OUT)/bin/%: $(QEMU_LF_OUT)/obj/fuzz/%.o $(QEMU_LF_SUPPORT) $(QEMU_LF_LIB)
	@mkdir -p $(@D)
	$(QEMU_LF_CC) -fsanitize=fuzzer $(FUZZ_SAN) -pthread -o $@ $^
endif
