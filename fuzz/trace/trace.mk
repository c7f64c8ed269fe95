# The trace recorder (fuzz/trace/rec.c): vigil's prefixed build plus a log of
# every malloc-family call, as an LD_PRELOAD library.  `make traces`
# re-records the real programs whose calls are seeds in corpus/ (see
# fuzz/trace/record.sh and corpus/NOTES).
$(BUILD)/libvigil-trace.so: fuzz/trace/rec.c fuzz/trace/trace.h $(BUILD)/libvigil_prefixed.a
	$(CC) $(CFLAGS_LIB) -Isrc -shared -Wl,-z,now -o $@ fuzz/trace/rec.c \
	  -Wl,--whole-archive $(BUILD)/libvigil_prefixed.a -Wl,--no-whole-archive

traces: | $(DEPS_STAMP)
	@bash ci/deps.sh traces
	@$(MAKE) --no-print-directory $(BUILD)/libvigil-trace.so
	@BUILD=$(BUILD) bash fuzz/trace/record.sh
.PHONY: traces
