# pinshim: make | make test | make demo | make gpu-test | make bench | make install PREFIX=...
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
CC        ?= gcc
BUILD     := build

WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
CFLAGS    ?= -O2 -g
SHIM_CFLAGS := -std=gnu11 $(CFLAGS) $(WARN) -fPIC -fvisibility=hidden -pthread \
               -Ishim -Ipolicy -Iinclude -I$(BUILD)/gen -I$(CUDA_HOME)/include
SHIM_LDFLAGS := -shared -pthread -Wl,--no-undefined -Wl,-z,now -ldl

SHIM_SRC  := $(wildcard shim/*.c) policy/policy.c $(BUILD)/gen/presets.c
SHIM_ASM  := $(wildcard shim/*.S)
SHIM_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(notdir $(SHIM_SRC))) \
             $(patsubst %.S,$(BUILD)/obj/%.o,$(notdir $(SHIM_ASM)))
SHIM_HDR  := $(wildcard shim/*.h policy/*.h include/*.h)
PRESETS   := $(wildcard policy/*.conf)

FAKE_SRC  := $(wildcard tests/fakecuda/*.c)
FAKE_HDR  := $(wildcard tests/fakecuda/*.h)
FAKE_LIB  := $(BUILD)/fakecuda/libcuda.so.1

PROG_SRC  := $(wildcard tests/progs/*.c)
PROGS     := $(patsubst tests/progs/%.c,$(BUILD)/tests/%,$(PROG_SRC))
TEST_LIBS := $(BUILD)/tests/libnext_a.so $(BUILD)/tests/libnext_b.so $(BUILD)/tests/libstack_probe.so

.PHONY: all fakecuda test-build test demo gpu-test bench install clean
all: $(BUILD)/libpinshim.so

vpath %.c shim policy $(BUILD)/gen
vpath %.S shim

$(BUILD)/gen/presets.c: $(PRESETS) scripts/embed-presets.sh
	@mkdir -p $(@D)
	sh scripts/embed-presets.sh $(PRESETS) > $@

$(BUILD)/obj/%.o: %.c $(SHIM_HDR) | $(BUILD)/gen/presets.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.S
	@mkdir -p $(@D)
	$(CC) -c $< -o $@

$(BUILD)/libpinshim.so: $(SHIM_OBJ)
	$(CC) $(SHIM_OBJ) -o $@ $(SHIM_LDFLAGS)

fakecuda: $(FAKE_LIB)
$(FAKE_LIB): $(FAKE_SRC) $(FAKE_HDR)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -fPIC -shared -pthread -I$(CUDA_HOME)/include \
	    -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o $@ $(FAKE_SRC) -ldl
	ln -sf libcuda.so.1 $(BUILD)/fakecuda/libcuda.so

# C test programs: driver API users built against cuda.h. Those named *_linked link -lcuda
# (route 1); the others find the driver at run time (routes 2 and 3). dlnext links two small
# libraries that look up "the next" symbol, to check the shim's dlsym forwarding.
comma := ,
PROG_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -pthread -Iinclude -Itests/progs -I$(CUDA_HOME)/include
PROG_LINK_linked := -L$(BUILD)/fakecuda -lcuda -Wl,-rpath,'$$ORIGIN/../fakecuda'
PROG_LINK_dlnext := -L$(BUILD)/tests -Wl,--no-as-needed -lnext_a -lnext_b -Wl,-rpath,'$$ORIGIN'
$(BUILD)/tests/%: tests/progs/%.c $(wildcard tests/progs/*.h) $(FAKE_LIB) $(TEST_LIBS)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $< -o $@ -ldl $(if $(findstring _linked,$*),$(PROG_LINK_linked)) \
	    $(if $(filter dlnext,$*),$(PROG_LINK_dlnext)) $(if $(filter logprog,$*),-rdynamic)

# The differential fuzzer (tests/fuzz): one program from several files; it finds the driver at run
# time, so the same binary runs on the fake and on a real driver.
FUZZ_SRC  := $(wildcard tests/fuzz/*.c)
FUZZ_PROG := $(BUILD)/tests/fuzzprog
$(FUZZ_PROG): $(FUZZ_SRC) $(wildcard tests/fuzz/*.h) tests/progs/testutil.h
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Wshadow -Wmissing-prototypes $(FUZZ_SRC) -o $@ -ldl

$(BUILD)/tests/lib%.so: tests/progs/lib/%.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -fPIC -shared -I$(CUDA_HOME)/include $< -o $@ -ldl

test-build: all $(FAKE_LIB) $(PROGS) $(TEST_LIBS) $(FUZZ_PROG)

test:
	sh scripts/install-test-deps.sh
	$(MAKE) test-build
	bats tests/bats

demo: all $(FAKE_LIB) $(BUILD)/tests/demo
	sh scripts/demo.sh

gpu-test: all
	bash tests/gpu/run.sh

bench: all
	bash tests/bench/run_passthrough.sh
	bash tests/bench/run_staging.sh
	bash tests/bench/run_reuse.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/pinshim/policy
	install -m 0755 $(BUILD)/libpinshim.so $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 include/pinshim.h $(DESTDIR)$(PREFIX)/include/
	install -m 0644 $(PRESETS) $(DESTDIR)$(PREFIX)/share/pinshim/policy/
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/pinshim/pinshim_report
	install -m 0755 scripts/pinshim scripts/pinshim-report $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 scripts/pinshim_report/*.py $(DESTDIR)$(PREFIX)/share/pinshim/pinshim_report/
	install -m 0644 policy/keys.h $(DESTDIR)$(PREFIX)/share/pinshim/

clean:
	rm -rf $(BUILD)
