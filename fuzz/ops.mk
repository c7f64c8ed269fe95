# vigil-ops: prints op programs as text and assembles the text form back
# (fuzz/FORMAT.md).  Included from the Makefile; standalone:
#   make -f Makefile -f fuzz/ops.mk build/vigil-ops
VIGIL_OPS_CFLAGS := -std=gnu11 -O2 -Wall -Wextra $(if $(WERROR),-Werror) -Ifuzz

$(BUILD)/vigil-ops: fuzz/vigil_ops.c fuzz/program.c fuzz/program.h
	@mkdir -p $(@D)
	$(CC) $(VIGIL_OPS_CFLAGS) -o $@ fuzz/vigil_ops.c fuzz/program.c

ops-tool: $(BUILD)/vigil-ops
.PHONY: ops-tool
