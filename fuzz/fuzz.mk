# Fuzzing: each target fuzz/<t>.c (one LLVMFuzzerTestOneInput) built three
# ways, into $(BUILD)/fuzz/<engine>/<t>, and the runner.  See fuzz/README.md.
#
#   make fuzz [SECONDS=60] [ENGINE=libfuzzer|afl] [JOBS=1] [FUZZ_WORK=dir]
#             [FUZZ_TARGETS="api edge"]      build, then run each target
#             (JOBS: libFuzzer targets at once; AFL++ instances per target,
#             one -M and JOBS-1 -S: CMPLOG, ASan, then plain)
#   make fuzz-smoke                          every target, libFuzzer, 5 s each,
#                                            from the seeds ($(BUILD)/fuzz/smoke-work)
#   make fuzz-build                          every engine whose tools are here
#   make fuzz-replay-build                   the replay mains (make check)
#   make triage INPUT=f                      one failing input on every host
#                                            variant and QEMU target (below)
#
# Engines:
#   replay     $(CC), no sanitizer, fuzz/replay.c as main, libvigil_prefixed.a
#   libfuzzer  clang -fsanitize=fuzzer,address,undefined; vigil's own sources
#              are rebuilt with ASan+UBSan and coverage (fuzzer-no-link), so
#              the fuzzer is guided by the allocator's branches too
#   afl        afl-clang-fast everywhere, linked with -fsanitize=fuzzer, which
#              brings AFL++'s libAFLDriver (persistent mode, shared-memory
#              test cases); no sanitizer: speed, and the oracle and vigil's
#              checks abort on their own
# Every engine links the same objects: the target, fuzz/program.c and
# diff/*.c, all with -DVIGIL_PREFIX (glibc stays the process's malloc).

FUZZ_TARGETS := api threads fork corrupt options edge
SECONDS ?= 60
ENGINE ?= libfuzzer
JOBS ?= 1
FUZZ_WORK ?=
FUZZ_CLANG ?= clang
FUZZ_AFL_CC ?= afl-clang-fast

FUZZ_SUPPORT := fuzz/program.c $(wildcard diff/*.c)
FUZZ_HDRS := $(wildcard fuzz/*.h diff/*.h) $(HDRS)
FUZZ_CFLAGS := -std=gnu11 -O1 -g -pthread -Isrc -Ifuzz -Idiff -DVIGIL_PREFIX -Wall -Wextra $(ANNOTATE_CFLAGS)
# vigil's sources: the library's own flags at -O1, without -Werror (a
# warning only one compiler gives must not stop a fuzzing run).
FUZZ_LIB_CFLAGS := $(filter-out -O% -Werror $(EXTRA_CFLAGS),$(CFLAGS_LIB)) -O1 -DVIGIL_PREFIX
# Frame pointers: ASan's fast unwinder and vigil's block history
# (src/history.c) walk them.
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

# Recursive calls name the top makefile, so that `make -f X` works too.
FUZZ_MAKE = $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST))

fuzz_bins = $(addprefix $(BUILD)/fuzz/$(1)/,$(FUZZ_TARGETS))
fuzz_objs = $(patsubst %.c,$(BUILD)/fuzz/obj-$(1)/%.o,$(2))
FUZZ_VIGIL_SRCS := $(wildcard src/*.c)

# ---- the tools, with the Debian package that brings each -----------------
define fuzz_need_libfuzzer
command -v $(FUZZ_CLANG) >/dev/null 2>&1 || { echo "fuzz: $(FUZZ_CLANG) not found: install the Debian package clang (bash ci/deps.sh fuzz)" >&2; exit 1; }; \
rt=$$($(FUZZ_CLANG) -print-runtime-dir 2>/dev/null); \
for l in fuzzer asan ubsan_standalone; do \
  test -f "$$rt/libclang_rt.$$l-$$(uname -m).a" || { echo "fuzz: $$rt/libclang_rt.$$l-$$(uname -m).a is missing: install the Debian packages libclang-rt-14-dev and libfuzzer-14-dev (bash ci/deps.sh fuzz)" >&2; exit 1; }; \
done
endef
define fuzz_need_afl
for t in $(FUZZ_AFL_CC) afl-fuzz; do \
  command -v $$t >/dev/null 2>&1 || { echo "fuzz: $$t not found: install the Debian package afl++ (bash ci/deps.sh fuzz)" >&2; exit 1; }; \
done
endef
fuzz-tools-replay:
	@command -v $(CC) >/dev/null 2>&1 || { echo "fuzz: $(CC) not found: install the Debian package gcc or clang" >&2; exit 1; }
fuzz-tools-libfuzzer:
	@$(fuzz_need_libfuzzer)
fuzz-tools-afl:
	@$(fuzz_need_afl)

# ---- replay: any compiler, no sanitizer -----------------------------------
FUZZ_REPLAY_COMMON := $(call fuzz_objs,replay,fuzz/replay.c $(FUZZ_SUPPORT))
$(BUILD)/fuzz/obj-replay/%.o: %.c $(FUZZ_HDRS) | fuzz-tools-replay
	@mkdir -p $(@D)
	$(CC) $(FUZZ_CFLAGS) $(if $(WERROR),-Werror) $(EXTRA_CFLAGS) -c $< -o $@
$(call fuzz_bins,replay): $(BUILD)/fuzz/replay/%: $(BUILD)/fuzz/obj-replay/fuzz/%.o $(FUZZ_REPLAY_COMMON) $(BUILD)/libvigil_prefixed.a
	@mkdir -p $(@D)
	$(CC) $(EXTRA_CFLAGS) -pthread -o $@ $^

# ---- libFuzzer: clang, ASan + UBSan, coverage of vigil too -----------------
FUZZ_LF_LIB := $(BUILD)/fuzz/obj-libfuzzer/libvigil_prefixed.a
$(BUILD)/fuzz/obj-libfuzzer/vigil/%.o: src/%.c $(HDRS) | fuzz-tools-libfuzzer $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CLANG) $(FUZZ_LIB_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_LF_LIB): $(patsubst src/%.c,$(BUILD)/fuzz/obj-libfuzzer/vigil/%.o,$(FUZZ_VIGIL_SRCS))
	rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/obj-libfuzzer/%.o: %.c $(FUZZ_HDRS) | fuzz-tools-libfuzzer
	@mkdir -p $(@D)
	$(FUZZ_CLANG) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@
$(call fuzz_bins,libfuzzer): $(BUILD)/fuzz/libfuzzer/%: $(BUILD)/fuzz/obj-libfuzzer/fuzz/%.o $(call fuzz_objs,libfuzzer,$(FUZZ_SUPPORT)) $(FUZZ_LF_LIB)
	@mkdir -p $(@D)
	$(FUZZ_CLANG) -fsanitize=fuzzer $(FUZZ_SAN) -pthread -o $@ $^

# ---- AFL++: afl-clang-fast, persistent mode through libAFLDriver -----------
# Three builds, all of every target: afl (plain: the -M instance and most -S
# ones), afl-cmplog (AFL_LLVM_CMPLOG: comparison operands logged, for
# afl-fuzz -c) and afl-asan (AFL_USE_ASAN: an -S instance that sees memory
# errors).  `make fuzz ENGINE=afl JOBS=N` with N > 1 runs them together
# (fuzz/run.sh).  AFL_QUIET: no banner per file.
FUZZ_AFL_VARIANTS := afl afl-cmplog afl-asan
FUZZ_AFL_ENV_afl := AFL_QUIET=1
FUZZ_AFL_ENV_afl-cmplog := AFL_QUIET=1 AFL_LLVM_CMPLOG=1
FUZZ_AFL_ENV_afl-asan := AFL_QUIET=1 AFL_USE_ASAN=1
define fuzz_afl_variant
$(BUILD)/fuzz/obj-$(1)/vigil/%.o: src/%.c $(HDRS) | fuzz-tools-afl $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(FUZZ_AFL_ENV_$(1)) $(FUZZ_AFL_CC) $(FUZZ_LIB_CFLAGS) -c $$< -o $$@
$(BUILD)/fuzz/obj-$(1)/libvigil_prefixed.a: $(patsubst src/%.c,$(BUILD)/fuzz/obj-$(1)/vigil/%.o,$(FUZZ_VIGIL_SRCS))
	rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/fuzz/obj-$(1)/%.o: %.c $(FUZZ_HDRS) | fuzz-tools-afl
	@mkdir -p $$(@D)
	$(FUZZ_AFL_ENV_$(1)) $(FUZZ_AFL_CC) $(FUZZ_CFLAGS) -c $$< -o $$@
$(call fuzz_bins,$(1)): $(BUILD)/fuzz/$(1)/%: $(BUILD)/fuzz/obj-$(1)/fuzz/%.o $(call fuzz_objs,$(1),$(FUZZ_SUPPORT)) \
    $(BUILD)/fuzz/obj-$(1)/libvigil_prefixed.a
	@mkdir -p $$(@D)
	$(FUZZ_AFL_ENV_$(1)) $(FUZZ_AFL_CC) -fsanitize=fuzzer -pthread -o $$@ $$^
fuzz-build-$(1): $(call fuzz_bins,$(1))
.PHONY: fuzz-build-$(1)
endef
$(foreach v,$(FUZZ_AFL_VARIANTS),$(eval $(call fuzz_afl_variant,$(v))))

# ---- replay under one sanitizer (make triage): clang, all of it rebuilt ----
# $(BUILD)/fuzz/replay-<v>/<t> for v in asan ubsan tsan: the replay main with
# vigil's own sources, the target and the oracle built with that sanitizer.
FUZZ_SAN_asan := -fsanitize=address -fno-omit-frame-pointer
FUZZ_SAN_ubsan := -fsanitize=undefined -fno-sanitize-recover=undefined
FUZZ_SAN_tsan := -fsanitize=thread
FUZZ_SAN_VARIANTS := asan ubsan tsan
define fuzz_san_variant
$(BUILD)/fuzz/obj-replay-$(1)/vigil/%.o: src/%.c $(HDRS) | fuzz-tools-libfuzzer $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(FUZZ_CLANG) $(FUZZ_LIB_CFLAGS) $(FUZZ_SAN_$(1)) -c $$< -o $$@
$(BUILD)/fuzz/obj-replay-$(1)/%.o: %.c $(FUZZ_HDRS) | fuzz-tools-libfuzzer
	@mkdir -p $$(@D)
	$(FUZZ_CLANG) $(FUZZ_CFLAGS) $(FUZZ_SAN_$(1)) -c $$< -o $$@
$(call fuzz_bins,replay-$(1)): $(BUILD)/fuzz/replay-$(1)/%: $(BUILD)/fuzz/obj-replay-$(1)/fuzz/%.o \
    $(call fuzz_objs,replay-$(1),fuzz/replay.c $(FUZZ_SUPPORT)) \
    $(patsubst src/%.c,$(BUILD)/fuzz/obj-replay-$(1)/vigil/%.o,$(FUZZ_VIGIL_SRCS))
	@mkdir -p $$(@D)
	$(FUZZ_CLANG) $(FUZZ_SAN_$(1)) -pthread -o $$@ $$^
fuzz-build-replay-$(1): $(call fuzz_bins,replay-$(1))
.PHONY: fuzz-build-replay-$(1)
endef
$(foreach v,$(FUZZ_SAN_VARIANTS),$(eval $(call fuzz_san_variant,$(v))))

# ---- triage: one failing input, everywhere (fuzz/triage.sh -h) -------------
# make triage INPUT=f [TARGET=t] [ARCHES="..."] [VARIANTS="..."] [RUNS=3] [MINIMIZE=0]
# ARCHES defaults to every QEMU target here (not qemu-check's two); give
# ARCHES= for the host only.
triage:
	$(if $(INPUT),,$(error make triage INPUT=<file> [TARGET=t] [ARCHES="..."] [VARIANTS="..."] [RUNS=n]))
	@bash ci/deps.sh triage
	@BUILD=$(BUILD) bash fuzz/triage.sh $(if $(TARGET),-t '$(TARGET)') \
	  $(if $(filter file,$(origin ARCHES)),,-a '$(ARCHES)') $(if $(VARIANTS),-v '$(VARIANTS)') \
	  $(if $(RUNS),-r '$(RUNS)') $(if $(filter 0,$(MINIMIZE)),-M) '$(INPUT)'
.PHONY: triage

# ---- phony targets ---------------------------------------------------------
fuzz-replay-build: $(call fuzz_bins,replay)
fuzz-build-replay: fuzz-replay-build
fuzz-build-libfuzzer: $(call fuzz_bins,libfuzzer)

# Every engine whose tools are installed; says which were skipped and why.
fuzz-build: fuzz-replay-build
	+@if msg=$$( { $(fuzz_need_libfuzzer); } 2>&1 ); then $(FUZZ_MAKE) fuzz-build-libfuzzer; \
	 else echo "fuzz-build: libFuzzer engine skipped: $$msg"; fi
	+@if msg=$$( { $(fuzz_need_afl); } 2>&1 ); then $(FUZZ_MAKE) fuzz-build-afl; \
	 else echo "fuzz-build: AFL++ engine skipped: $$msg"; fi

# The runner gets everything as options; fuzz/run.sh -h lists them.
FUZZ_RUN = BUILD=$(BUILD) bash fuzz/run.sh -j $(JOBS) $(if $(FUZZ_WORK),-w $(FUZZ_WORK))

fuzz:
	$(if $(filter $(ENGINE),libfuzzer afl),,$(error ENGINE=$(ENGINE): use ENGINE=libfuzzer or ENGINE=afl))
	@bash ci/deps.sh fuzz
	+@$(FUZZ_MAKE) fuzz-replay-build fuzz-build-$(ENGINE) \
	  $(if $(and $(filter afl,$(ENGINE)),$(filter-out 1,$(JOBS))),fuzz-build-afl-cmplog fuzz-build-afl-asan)
	@$(FUZZ_RUN) -e $(ENGINE) -s $(SECONDS) $(FUZZ_TARGETS)

# The smoke run (make check) starts from the seeds every time, in its own
# folder under $(BUILD), so its length does not grow with the corpus that
# `make fuzz` keeps; crashes/ there is kept.
FUZZ_SMOKE_WORK := $(BUILD)/fuzz/smoke-work
# A fixed count of inputs from seed 1 (FUZZ_RUNS), not a time: the same
# tree does the same work on every run.  400 s is only a bound for a
# machine far slower than this one (fork, the slowest, took 92 s in CI
# beside the other targets).
FUZZ_SMOKE_RUNS ?= 200
fuzz-smoke:
	+@$(FUZZ_MAKE) fuzz-replay-build fuzz-build-libfuzzer
	@$(if $(FUZZ_WORK),,rm -rf $(FUZZ_SMOKE_WORK)/libfuzzer/*/corpus)
	@FUZZ_RUNS=$(FUZZ_SMOKE_RUNS) $(FUZZ_RUN) $(if $(FUZZ_WORK),,-w $(FUZZ_SMOKE_WORK)) -e libfuzzer -s 400 $(FUZZ_TARGETS)

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-replay-build fuzz-build-replay fuzz-build-libfuzzer \
        fuzz-tools-replay fuzz-tools-libfuzzer fuzz-tools-afl
