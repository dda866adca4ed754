# pinshim: make | make test | make demo | make gpu-test | make bench | make bench-workloads | make conformance | make install PREFIX=...
# make demo and make test first run scripts/install-deps.sh, which installs the Debian packages they
# need (as root) or names them and the apt-get line (otherwise); make deps runs its build check alone.
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
CC        ?= gcc
BUILD     := build

WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
CFLAGS    ?= -O2 -g
# Link-time optimization: the copy and sync handlers call into five layers per call; inlined across
# files, an observed copy runs 13 % fewer instructions and what observing costs PyTorch's small
# operations fell on most rows measured (README, "2026-11-26, eighth stop"). Used where the
# compiler can link that way (a gcc without its LTO plugin cannot); the objects keep ordinary code
# too, so they also link with -fno-lto. `make clean; make LTO=-fno-lto` builds without it.
ifeq ($(origin LTO),undefined)
LTO := $(shell echo 'int main(void){return 0;}' | $(CC) -flto=auto -x c - -o /dev/null 2>/dev/null && \
         echo -flto=auto -ffat-lto-objects || echo -fno-lto)
endif
SHIM_CFLAGS := -std=gnu11 $(CFLAGS) $(LTO) $(WARN) -fPIC -fvisibility=hidden -pthread \
               -Ishim -Ipolicy -Iinclude -I$(BUILD)/gen -I$(CUDA_HOME)/include
# Profile-guided layout: where the shim has nothing to do, what a call costs is mostly its own
# instructions arriving cold, after the program's work between calls has pushed them out (README,
# "Real-workload benchmarks"); laid out from a profile, a small copy's path runs on fewer lines.
# The library is built twice: once instrumented ($(BUILD)/pgo/), which runs the hot loops of
# tests/bench/footprint_loop.c on the null driver (tests/bench/nullcuda.c: CPU only, any machine),
# then again from that profile. Code the loops never ran is optimized as it would be without one
# (-fprofile-partial-training). So that the same sources mostly give the same library, the training
# fixes the seed of the calls it times at random (PINSHIM_SAMPLE_SEED) and its loop starts once the
# shim's clock is calibrated (footprint_loop.c): 10 of 11 builds here gave one sha1 (the profile's
# value counters still record addresses and the clock's calibration). With the clock's seed, the
# two builds compared differed. Used where the compiler can (gcc 10 or later); `make PGO=off` builds once,
# without it.
ifeq ($(origin PGO),undefined)
PGO := $(shell echo 'int main(void){return 0;}' | $(CC) -fprofile-use -fprofile-partial-training \
         -Wno-missing-profile -x c - -o /dev/null 2>/dev/null && echo on || echo off)
endif
SHIM_LDFLAGS := -shared -pthread -Wl,--no-undefined -Wl,-z,now -ldl

# shim/ is one folder per layer (see README "Architecture"); objects mirror the source tree under
# $(BUILD)/obj, so two layers may hold files of the same name.
SHIM_SRC  := $(wildcard shim/*/*.c) policy/policy.c
SHIM_ASM  := $(wildcard shim/*/*.S)
SHIM_OBJ  := $(patsubst %,$(BUILD)/obj/%.o,$(basename $(SHIM_SRC) $(SHIM_ASM))) $(BUILD)/obj/gen/presets.o \
             $(BUILD)/obj/gen/build_commit.o
SHIM_HDR  := $(wildcard shim/*/*.h policy/*.h include/*.h)
PRESETS   := $(wildcard policy/*.conf)

FAKE_SRC  := $(wildcard tests/fakecuda/*.c)
FAKE_HDR  := $(wildcard tests/fakecuda/*.h)
FAKE_LIB  := $(BUILD)/fakecuda/libcuda.so.1

PROG_SRC  := $(wildcard tests/progs/*.c)
PROGS     := $(patsubst tests/progs/%.c,$(BUILD)/tests/%,$(PROG_SRC))
TEST_LIBS := $(BUILD)/tests/libnext_a.so $(BUILD)/tests/libnext_b.so $(BUILD)/tests/libstack_probe.so \
             $(BUILD)/tests/libframecopy.so $(BUILD)/tests/libcxxalloc.so $(BUILD)/tests/liblatetable.so

.PHONY: all deps fakecuda test-build test demo gpu-test bench bench-workloads bench-hook-variants install clean conformance FORCE
all: $(BUILD)/libpinshim.so

$(BUILD)/gen/presets.c: $(PRESETS) scripts/embed-presets.sh
	@mkdir -p $(@D)
	sh scripts/embed-presets.sh $(PRESETS) > $@

ifeq ($(PGO),on)
PGO_USE   := -fprofile-use -fprofile-partial-training
PGO_STAMP := $(BUILD)/pgo/trained
endif

$(BUILD)/obj/%.o: %.c $(SHIM_HDR) $(PGO_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) $(PGO_USE) -c $< -o $@

# The instrumented build: each object writes its profile where its final object will be compiled
# (-dumpdir), which is where -fprofile-use looks for it. The generated objects and the assembly
# are not instrumented; the build's commit is linked in, but a new commit retrains nothing.
PGO_GEN_OBJ := $(patsubst $(BUILD)/obj/%,$(BUILD)/pgo/obj/%,$(patsubst %,$(BUILD)/obj/%.o,$(basename $(SHIM_SRC))))
$(BUILD)/pgo/obj/%.o: %.c $(SHIM_HDR)
	@mkdir -p $(@D) $(BUILD)/obj/$(*D)
	$(CC) $(SHIM_CFLAGS) -fprofile-generate -fprofile-update=atomic -dumpdir $(BUILD)/obj/$(*D)/ -c $< -o $@

PGO_PLAIN_OBJ := $(filter-out $(patsubst %,$(BUILD)/obj/%.o,$(basename $(SHIM_SRC))),$(SHIM_OBJ))
$(BUILD)/pgo/libpinshim.so: $(PGO_GEN_OBJ) | $(PGO_PLAIN_OBJ)
	$(CC) $(CFLAGS) $(LTO) $(WARN) -fprofile-generate $(PGO_GEN_OBJ) $(PGO_PLAIN_OBJ) -o $@ $(SHIM_LDFLAGS)

# The training: every mode of footprint_loop, in a clean environment (the defaults), the profiles
# of an earlier training removed first (a run adds to what it finds). A failure shows its log.
# Mode f (a fresh 1 MiB buffer) runs a tenth as often: at the same count its code, laid out among
# the small copies', spread their path over 2-4 more lines (tests/bench/footprint.py).
PGO_MODES := d h p q e f
$(BUILD)/pgo/trained: $(BUILD)/pgo/libpinshim.so tests/bench/footprint_loop.c tests/bench/nullcuda.c
	@mkdir -p $(BUILD)/pgo/null
	$(CC) -O2 -shared -fPIC tests/bench/nullcuda.c -o $(BUILD)/pgo/null/libcuda.so.1
	ln -sf libcuda.so.1 $(BUILD)/pgo/null/libcuda.so
	$(CC) -O2 -I$(CUDA_HOME)/include tests/bench/footprint_loop.c -o $(BUILD)/pgo/loop -L$(BUILD)/pgo/null -lcuda
	find $(BUILD)/obj -name '*.gcda' -delete 2>/dev/null || true
	for m in $(PGO_MODES); do \
	    n=20000; [ "$$m" != f ] || n=2000; \
	    env -i PATH="$$PATH" LD_LIBRARY_PATH=$(BUILD)/pgo/null LD_PRELOAD=$(abspath $(BUILD)/pgo/libpinshim.so) \
	        PINSHIM_SUMMARY=none PINSHIM_SAMPLE_SEED=1 $(BUILD)/pgo/loop $$n $$m >$(BUILD)/pgo/train.log 2>&1 || \
	        { echo "profile training failed in mode $$m (make PGO=off builds without it):" >&2; \
	          grep -v '^map ' $(BUILD)/pgo/train.log >&2; exit 1; }; \
	done
	touch $@

$(BUILD)/obj/gen/presets.o: $(BUILD)/gen/presets.c $(SHIM_HDR)
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

# Looked at on every build, rewritten only when the commit (or the sources' cleanliness) changed.
$(BUILD)/gen/build_commit.c: FORCE
	@mkdir -p $(@D)
	@sh scripts/build-commit.sh > $@.tmp; if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/obj/gen/build_commit.o: $(BUILD)/gen/build_commit.c $(SHIM_HDR)
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.S
	@mkdir -p $(@D)
	$(CC) -c $< -o $@

$(BUILD)/libpinshim.so: $(SHIM_OBJ)
	$(CC) $(CFLAGS) $(LTO) $(PGO_USE) $(WARN) $(SHIM_OBJ) -o $@ $(SHIM_LDFLAGS)

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

# stream_copy_check compiles shim/stage/stream_copy.c in (a unit test of that one file), and
# sample_check shim/base/clock.c.
$(BUILD)/tests/stream_copy_check: shim/stage/stream_copy.c shim/stage/stream_copy.h
$(BUILD)/tests/sample_check: shim/base/clock.c shim/base/clock.h shim/base/thread.h
# openmp_stage runs an OpenMP parallel region (libgomp loaded) before its copies; openmp_stage_llvm
# is the same program built with clang against LLVM's OpenMP runtime (libomp).
$(BUILD)/tests/openmp_stage: PROG_CFLAGS += -fopenmp
OMP_LLVM_PROG := $(BUILD)/tests/openmp_stage_llvm
$(OMP_LLVM_PROG): tests/progs/openmp_stage.c $(wildcard tests/progs/*.h)
	@mkdir -p $(@D)
	clang $(filter-out -Wextra,$(PROG_CFLAGS)) -fopenmp $< -o $@ -ldl
# real_check likewise compiles shim/base/real.c and base/util.c in.
$(BUILD)/tests/real_check: shim/base/real.c shim/base/real.h shim/base/util.c
$(BUILD)/tests/real_check: PROG_CFLAGS += -Ishim -Ipolicy
# thread_start_check likewise compiles shim/base/util.c in (the shim's thread starter).
$(BUILD)/tests/thread_start_check: shim/base/util.c
$(BUILD)/tests/thread_start_check: PROG_CFLAGS += -Ishim -Ipolicy
# alloc_table_check likewise compiles shim/hostmem/alloc_table.c and alloc_events.c in.
$(BUILD)/tests/alloc_table_check: shim/hostmem/alloc_table.c shim/hostmem/alloc_table.h shim/hostmem/alloc_events.c
$(BUILD)/tests/alloc_table_check: PROG_CFLAGS += -Ishim -Ipolicy
# workers_check likewise compiles shim/stage/workers.c, omp_team.c, stream_copy.c and base/util.c in, with OpenMP.
$(BUILD)/tests/workers_check: shim/stage/workers.c shim/stage/workers.h shim/stage/stream_copy.c
$(BUILD)/tests/workers_check: shim/stage/omp_team.c shim/stage/omp_team.h
$(BUILD)/tests/workers_check: shim/base/util.c
$(BUILD)/tests/workers_check: PROG_CFLAGS += -Ishim -Ipolicy -fopenmp

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
# C++ test libraries (the shim's operator new and delete), built with make's C++ compiler (g++).
$(BUILD)/tests/lib%.so: tests/progs/lib/%.cpp
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g -Wall -Wextra -fPIC -shared $< -o $@

# The driver conformance suite: one program, run on the fake or the real driver (run.sh).
CONF_SRC  := $(wildcard tests/conformance/*.c)
CONF      := $(BUILD)/conformance/conform
$(CONF): $(CONF_SRC) tests/conformance/conform.h tests/progs/testutil.h
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Itests/conformance $(CONF_SRC) -o $@ -ldl

# Measurement builds of the same objects with some allocation hooks kept local by a version script
# (the program's calls to them go straight to glibc) and interception forced off
# (tests/bench/hooks_off.c): what the hooks cost a workload, family by family, against the shim with
# interception off (tests/bench/workloads/README.md, "What the allocation hooks cost"). Never
# installed; made by test-build (the bats test checks their exports).
MALLOC_HOOKS  := malloc calloc realloc reallocarray free posix_memalign aligned_alloc memalign valloc pvalloc _Znwm _ZdlPv
MMAP_HOOKS    := mmap mmap64 munmap mremap madvise
HOOK_FAMILIES := malloc mmap alloc
hooks_of       = $(if $(filter malloc alloc,$1),$(MALLOC_HOOKS)) $(if $(filter mmap alloc,$1),$(MMAP_HOOKS))
HOOK_VARIANTS := $(patsubst %,$(BUILD)/bench/libpinshim-no-%-hooks.so,$(HOOK_FAMILIES))
bench-hook-variants: $(HOOK_VARIANTS)
$(BUILD)/bench/hooks_off.o: tests/bench/hooks_off.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(CFLAGS) $(WARN) -fPIC -c $< -o $@
$(BUILD)/bench/libpinshim-no-%-hooks.so: $(SHIM_OBJ) $(BUILD)/bench/hooks_off.o
	printf '{ global: *; local: %s };\n' "$(foreach s,$(call hooks_of,$*),$(s);)" >$@.map
	$(CC) $(CFLAGS) $(LTO) $(PGO_USE) $(WARN) $(SHIM_OBJ) $(BUILD)/bench/hooks_off.o -o $@ $(SHIM_LDFLAGS) \
	    -Wl,--version-script=$@.map

test-build: all $(FAKE_LIB) $(PROGS) $(OMP_LLVM_PROG) $(TEST_LIBS) $(CONF) $(FUZZ_PROG) $(HOOK_VARIANTS)

deps:
	CC="$(CC)" CUDA_HOME="$(CUDA_HOME)" sh scripts/install-deps.sh build

# The packages come first: a parallel make must not start compiling before they are there.
test:
	CC="$(CC)" CUDA_HOME="$(CUDA_HOME)" sh scripts/install-deps.sh test
	$(MAKE) test-build
	bats tests/bats

demo: deps
	$(MAKE) all $(FAKE_LIB) $(BUILD)/tests/demo
	sh scripts/demo.sh

# The conformance suite on the system's driver (the fake where there is no GPU), with and without
# the shim; the outputs go to build/conformance/out-<driver>/ (or $$OUT/conformance/).
conformance: all $(FAKE_LIB) $(CONF)
	bash tests/conformance/run.sh

gpu-test: all
	bash tests/gpu/run.sh

bench: all
	bash tests/bench/run_passthrough.sh
	bash tests/bench/run_staging.sh
	bash tests/bench/run_reuse.sh

# Real-workload benchmarks (tests/bench/workloads/README.md), on the GPU machine. This target only
# checks that build/libpinshim.so is there and never rebuilds it: the table names the build it
# measured (its commit), the one brought along. Options in BENCH_ARGS, e.g.
# make bench-workloads BENCH_ARGS="--pairs 7 --out $OUT".
PYTHON ?= python3
bench-workloads:
	@test -f $(BUILD)/libpinshim.so || { echo "bench-workloads: $(BUILD)/libpinshim.so is missing:" \
	    "build it with make and bring build/ along" >&2; exit 1; }
	$(PYTHON) tests/bench/workloads/run.py --shim $(BUILD)/libpinshim.so $(BENCH_ARGS)

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/pinshim/policy
	install -m 0755 $(BUILD)/libpinshim.so $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 include/pinshim.h $(DESTDIR)$(PREFIX)/include/
	install -m 0644 $(PRESETS) $(DESTDIR)$(PREFIX)/share/pinshim/policy/
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/pinshim/pinshim_report
	install -m 0755 scripts/pinshim scripts/pinshim-report $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 scripts/pinshim_report/*.py scripts/pinshim_report/*.schema.json \
	    $(DESTDIR)$(PREFIX)/share/pinshim/pinshim_report/
	install -m 0644 policy/keys.h $(DESTDIR)$(PREFIX)/share/pinshim/

clean:
	rm -rf $(BUILD)
