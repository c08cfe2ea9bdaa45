# corestack — see README.md.  `make` builds, `make test` runs every test,
# `make demo` shows corestack on a core of a fixture scenario.
CC      ?= cc
CFLAGS  ?= -O2 -g
# Warnings are errors in make test and CI (WERROR=-Werror there), not in
# a user's plain make, where a newer compiler's new warning must not stop
# the build.
WERROR  ?=
WARN     = -std=c17 -D_GNU_SOURCE -Wall -Wextra $(WERROR)
# libdebuginfod, libzstd, liblz4 and libbz2 are not linked:
# util/lazy_lib.c loads them (dlopen) when a debuginfod server is to be
# asked (dwarf/debuginfod.c) or a zstd, lz4 or bzip2 core inflated
# (process/decompress.c), so start-up does not load them, nor the thirty
# libraries libdebuginfod brings (libcurl, TLS, Kerberos, LDAP). Only their
# headers are needed to build.
LIBS    := -ldw -lelf -llzma -lz
BUILD   := build

# Sources, listed once, by layer (docs/ARCHITECTURE.md; `make lint` checks
# that each folder includes only from the folders below it). The library:
# every layer below the two front ends; the CLI (corestack/) and the
# debugger module (gdbext/) link it, and so do the unit tests, the checks
# and the fuzzers. The CLI's own files but main.c form a second library the
# unit tests of the CLI link.
LAYERS     := util dwarf process rubyvm engine render profile sampling
LIB_SRC    := $(foreach d,$(LAYERS),$(wildcard $(d)/*.c))
CLI_SRC    := $(filter-out corestack/main.c,$(wildcard corestack/*.c))
GDBEXT_SRC := $(wildcard gdbext/*.c)

SAN_FLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=all
PY_CFLAGS  := $(shell pkg-config --cflags python3 2>/dev/null)

.PHONY: all test unit demo deps fixtures clean bench gdbext gdbext-san install uninstall bench-gdbext \
        bench-sampling bench-contention mutate bench-pause lint format \
        bench-profile-write bench-startup bench-heap
all: $(BUILD)/corestack gdbext

# One object tree and library per way of compiling: build/VARIANT/... and
# build/VARIANT/libcorestack.a (and libcorestack-cli.a). Header dependencies come from -MMD.
objs = $(patsubst %.c,$(BUILD)/$(1)/%.o,$(2))
define variant
$(BUILD)/$(1)/%.o: %.c
	@mkdir -p $$(@D)
	$(2) -MMD -MP -c $$< -o $$@
$(BUILD)/$(1)/libcorestack.a: $$(call objs,$(1),$$(LIB_SRC))
	rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/$(1)/libcorestack-cli.a: $$(call objs,$(1),$$(CLI_SRC))
	rm -f $$@ && ar rcs $$@ $$^
endef
# plain (the CLI), ASan+UBSan (what the tests run), position-independent
# with hidden symbols (the debugger module), the same under UBSan.
$(eval $(call variant,plain,$$(CC) $$(WARN) $$(CFLAGS)))
$(eval $(call variant,san,$$(CC) $$(WARN) $$(SAN_FLAGS)))
$(eval $(call variant,pic,$$(CC) $$(WARN) $$(CFLAGS) $$(PY_CFLAGS) -fPIC -fvisibility=hidden))
$(eval $(call variant,pic-san,$$(CC) $$(WARN) $$(GDBEXT_SAN_FLAGS) $$(PY_CFLAGS) -fPIC -fvisibility=hidden))
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

$(BUILD)/corestack: $(BUILD)/plain/corestack/main.o $(BUILD)/plain/libcorestack-cli.a \
                   $(BUILD)/plain/libcorestack.a
	$(CC) $(CFLAGS) $^ $(LIBS) -o $@

# The same program under AddressSanitizer and UBSan: what the tests run.
$(BUILD)/corestack-san: $(BUILD)/san/corestack/main.o $(BUILD)/san/libcorestack-cli.a \
                       $(BUILD)/san/libcorestack.a
	$(CC) $(SAN_FLAGS) $^ $(LIBS) -o $@

$(BUILD):
	mkdir -p $@

# gdbext: the CPython extension gdb and lldb load (stable ABI: one .so for
# any Python 3.7+), the engine and the CLI's readers compiled into it, and
# the loaders next to it. Symbols stay inside: no clash with the debugger's.
GDBEXT_DIR := $(BUILD)/gdbext
GDBEXT_SO  := $(GDBEXT_DIR)/_corestack.abi3.so
GDBEXT_PY  := $(GDBEXT_DIR)/ruby-gdb.py $(GDBEXT_DIR)/ruby_lldb.py
gdbext: $(GDBEXT_SO) $(GDBEXT_PY)

$(GDBEXT_SO): $(call objs,pic,$(GDBEXT_SRC)) $(BUILD)/pic/libcorestack.a | $(GDBEXT_DIR)
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden -Wl,-Bsymbolic -pthread \
		$^ $(LIBS) -o $@

$(GDBEXT_DIR)/%.py: gdbext/%.py | $(GDBEXT_DIR)
	cp $< $@

$(GDBEXT_DIR):
	mkdir -p $@

# The module the tests load, under UBSan (a report aborts the debugger, so
# the test fails). Not ASan: its runtime must come first in the process
# (LD_PRELOAD into gdb), and Debian's gdb 13 with libasan preloaded hangs at
# start-up (in setlocale) before it runs a command. The same C runs under
# ASan+UBSan in corestack-san and the unit tests.
GDBEXT_SAN_DIR   := $(BUILD)/gdbext-san
GDBEXT_SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=undefined \
                    -fno-sanitize-recover=all
gdbext-san: $(GDBEXT_SAN_DIR)/_corestack.abi3.so \
            $(GDBEXT_SAN_DIR)/ruby-gdb.py $(GDBEXT_SAN_DIR)/ruby_lldb.py

$(GDBEXT_SAN_DIR)/_corestack.abi3.so: $(call objs,pic-san,$(GDBEXT_SRC)) \
                                      $(BUILD)/pic-san/libcorestack.a | $(GDBEXT_SAN_DIR)
	$(CC) $(GDBEXT_SAN_FLAGS) -fPIC -shared -fvisibility=hidden -Wl,-Bsymbolic \
		-pthread $^ $(LIBS) -o $@

$(GDBEXT_SAN_DIR)/%.py: gdbext/%.py | $(GDBEXT_SAN_DIR)
	cp $< $@

$(GDBEXT_SAN_DIR):
	mkdir -p $@

# make install [PREFIX=/usr/local] [DESTDIR=] [RUBY="ruby paths"]:
# corestack and its man page, the gdb/lldb module and loaders, corestack-lldb
# (lldb with the commands loaded), and gdb auto-load scripts for
# the Rubies named (default: the ruby on PATH; RUBY_FOR_GDB is the same) under
# GDB_AUTOLOAD_DIR, and a snippet in gdb's system gdbinit directory that tells
# gdb to read and trust GDB_AUTOLOAD_DIR. That directory is Debian's
# /etc/gdb/gdbinit.d for PREFIX /usr or /usr/local, else PREFIX/etc/gdb/gdbinit.d
# (gdb reads it only when told: the install says how); GDB_SYSTEM_GDBINIT_DIR=
# leaves the snippet out (the install says what to add to ~/.gdbinit). Also
# README.md and docs/ under DOCDIR, which the installed man page names.
# make uninstall removes what make install wrote, and the folders it made
# that are left empty.
PREFIX           ?= /usr/local
SYSCONFDIR       ?= $(if $(filter /usr /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc)
GDB_AUTOLOAD_DIR ?= $(PREFIX)/share/gdb/auto-load
GDB_SYSTEM_GDBINIT_DIR ?= $(SYSCONFDIR)/gdb/gdbinit.d
RUBY_FOR_GDB     ?= $(or $(RUBY),$(shell command -v ruby 2>/dev/null))
GDB_SNIPPET       = $(GDB_SYSTEM_GDBINIT_DIR)/corestack.gdb
# README.md and docs/, which the man page names (as DOCDIR/docs/NAME.md)
DOCDIR           ?= $(PREFIX)/share/doc/corestack
# What make uninstall removes when empty: the folders of corestack's own,
# and under a PREFIX of its own (not /usr, /usr/local), those install made.
UNINSTALL_DIRS    = $(DOCDIR)/docs $(DOCDIR) $(PREFIX)/lib/corestack \
	$(if $(filter /usr /usr/local,$(PREFIX)),,$(GDB_AUTOLOAD_DIR) \
		$(PREFIX)/share/gdb $(PREFIX)/share/man/man1 $(PREFIX)/share/man \
		$(PREFIX)/share/doc $(PREFIX)/share $(PREFIX)/lib $(PREFIX)/bin \
		$(if $(filter $(PREFIX)/%,$(GDB_SYSTEM_GDBINIT_DIR)), \
			$(GDB_SYSTEM_GDBINIT_DIR) $(dir $(GDB_SYSTEM_GDBINIT_DIR)) \
			$(SYSCONFDIR)))
install: $(BUILD)/corestack gdbext
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/corestack
	install -m 755 $(BUILD)/corestack $(DESTDIR)$(PREFIX)/bin/corestack
	install -m 644 $(GDBEXT_SO) $(GDBEXT_PY) $(DESTDIR)$(PREFIX)/lib/corestack/
	sed 's|@LIBDIR@|$(PREFIX)/lib/corestack|g' gdbext/corestack-lldb.in \
		> $(DESTDIR)$(PREFIX)/bin/corestack-lldb
	chmod 755 $(DESTDIR)$(PREFIX)/bin/corestack-lldb
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(DOCDIR)/docs
	sed 's|docs/\([a-z-]*\.md\)|$(DOCDIR)/docs/\1|g' docs/corestack.1 \
		> $(DESTDIR)$(PREFIX)/share/man/man1/corestack.1
	chmod 644 $(DESTDIR)$(PREFIX)/share/man/man1/corestack.1
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	./gdbext/install-autoload.sh "$(DESTDIR)" "$(GDB_AUTOLOAD_DIR)" \
		"$(PREFIX)/lib/corestack/ruby-gdb.py" $(RUBY_FOR_GDB)
	@if [ -n "$(GDB_SYSTEM_GDBINIT_DIR)" ]; then \
		./gdbext/install-snippet.sh "$(DESTDIR)" "$(GDB_SNIPPET)" \
			"$(GDB_AUTOLOAD_DIR)"; \
	elif [ "$(GDB_AUTOLOAD_DIR)" != /usr/share/gdb/auto-load ]; then \
		echo "install: no gdbinit snippet (GDB_SYSTEM_GDBINIT_DIR=):" \
			"add 'source $(PREFIX)/lib/corestack/ruby-gdb.py'" \
			"to ~/.gdbinit for gdb to have ruby-bt" >&2; fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/corestack $(DESTDIR)$(PREFIX)/bin/corestack-lldb \
		$(DESTDIR)$(PREFIX)/share/man/man1/corestack.1 \
		$(addprefix $(DESTDIR)$(PREFIX)/lib/corestack/,_corestack.abi3.so \
			ruby-gdb.py ruby_lldb.py)
	rm -f $(DESTDIR)$(DOCDIR)/README.md \
		$(addprefix $(DESTDIR)$(DOCDIR)/,$(wildcard docs/*.md))
	./gdbext/install-autoload.sh --remove "$(DESTDIR)" "$(GDB_AUTOLOAD_DIR)"
	$(if $(GDB_SYSTEM_GDBINIT_DIR),rm -f "$(DESTDIR)$(GDB_SNIPPET)")
	@for d in $(UNINSTALL_DIRS); do \
		rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done

# Unit tests: one program per file tests/unit/test_NAME.c, each on the
# engine; a program split by concept has the rest of its files in
# tests/unit/NAME/.
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/%,$(UNIT_SRC))
.SECONDEXPANSION:
$(BUILD)/test_%: tests/unit/test_%.c $$(wildcard tests/unit/$$*/*.c tests/unit/$$*/*.h) \
		$(BUILD)/san/libcorestack-cli.a $(BUILD)/san/libcorestack.a | $(BUILD)
	$(CC) $(WARN) $(SAN_FLAGS) -I. $(filter %.c %.a,$^) $(LIBS) -o $@

# test_dwarf reads back the DWARF of a small library built like the
# fixture Rubies (-g3, compressed sections).
$(BUILD)/dwarf_sample.so: tests/unit/dwarf_sample.c tests/unit/dwarf_sample.h | $(BUILD)
	$(CC) -std=c17 -g3 -gz=zlib -O0 -shared -fPIC $< -o $@

# Checks tests/run.py runs on the fixtures' cores (tests/tools).
$(BUILD)/check-frame-reuse: tests/tools/check_frame_reuse.c $(BUILD)/san/libcorestack.a | $(BUILD)
	$(CC) $(WARN) $(SAN_FLAGS) -I. $^ $(LIBS) -o $@

unit: $(UNIT_BIN) $(BUILD)/dwarf_sample.so
	@for t in $(UNIT_BIN); do $$t $(BUILD)/dwarf_sample.so || exit 1; done

# Everything a fresh Debian machine needs (apt packages), and the viewers
# the tests load profiles in (npm packages pinned by tests/viewers/).
deps:
	./.ci/install-deps
	$(MAKE) tests/viewers/node_modules/.package-lock.json

tests/viewers/node_modules/.package-lock.json: tests/viewers/package-lock.json
	cd tests/viewers && npm ci --no-audit --no-fund --ignore-scripts

# Two lanes at once: much of a Ruby build is serial (configure, each
# extension's extconf, install), so a second build fills the idle core.
# 3.3 is one lane (its variants share the source tree); 2.7, 3.1 and 3.4
# the other. Exit 3 of a yjit variant: no rustc, the tests say SKIP.
fixtures:
	@( ./fixtures/build-ruby.sh 2.7 && ./fixtures/build-ruby.sh 3.1 && \
	   ./fixtures/build-ruby.sh 3.4 && \
	   { ./fixtures/build-ruby.sh 3.4 yjit || [ $$? -eq 3 ]; } ) & \
	older=$$!; \
	./fixtures/build-ruby.sh 3.3 && ./fixtures/build-ruby.sh 3.3 static && \
	{ ./fixtures/build-ruby.sh 3.3 yjit || [ $$? -eq 3 ]; }; \
	newer=$$?; wait $$older && exit $$newer

# fuzz-regress: every crash the fuzzers found, replayed (tests/fuzz/).
# gdbext: make install (tested) builds the plain module too.
# Warnings are errors here and in CI, for everything this builds; the
# static analysers must be clean too.
test: WERROR := -Werror
test: deps lint $(BUILD)/corestack-san $(UNIT_BIN) $(BUILD)/dwarf_sample.so fixtures fuzz-regress \
      gdbext gdbext-san $(BUILD)/check-frame-reuse
	python3 tests/run.py --corestack $(BUILD)/corestack-san \
		--frame-reuse-check $(BUILD)/check-frame-reuse \
		--unit "$(UNIT_BIN)" --unit-arg $(BUILD)/dwarf_sample.so \
		--gdbext $(GDBEXT_SAN_DIR)

demo: deps $(BUILD)/corestack
	./fixtures/demo.sh $(BUILD)/corestack

$(BUILD)/bench-inflate: tests/bench/inflate.c | $(BUILD)
	$(CC) $(WARN) -O2 $< -lelf -lz -o $@

$(BUILD)/bench-read-floor: tests/bench/read_floor.c | $(BUILD)
	$(CC) $(WARN) -O2 $< -o $@

# BASELINE=path: an older build run beside this one, in turn, where a
# benchmark compares builds (start-up, the deep-thread core, a sample,
# 10,000 fibers).
BENCH_BASELINE = $(if $(BASELINE),--baseline $(BASELINE))
bench: deps $(BUILD)/corestack $(BUILD)/bench-inflate $(BUILD)/bench-read-floor fixtures
	python3 tests/bench_startup.py --corestack $(BUILD)/corestack $(BENCH_BASELINE)
	python3 tests/bench.py --corestack $(BUILD)/corestack $(BENCH_BASELINE)
	python3 tests/bench_sampling.py --corestack $(BUILD)/corestack $(BENCH_BASELINE)
	python3 tests/bench_fibers.py --corestack $(BUILD)/corestack --rubies 3.3 \
		--fibers 10000 --ballast 1000000 --cold-runs 3 $(BENCH_BASELINE)
	python3 tests/bench_heap.py --corestack $(BUILD)/corestack

# corestack heap on a core of about a million live objects: time and RSS.
bench-heap: deps $(BUILD)/corestack fixtures
	python3 tests/bench_heap.py --corestack $(BUILD)/corestack

# Start-up: corestack --version and a missing file beside /bin/true and
# eu-stack --help (BASELINE=path: another build beside them).
bench-startup: $(BUILD)/corestack
	python3 tests/bench_startup.py --corestack $(BUILD)/corestack $(BENCH_BASELINE)

# Each profile format writing a 100,000-sample recording (synthetic stacks).
$(BUILD)/bench-profile-write: tests/bench/profile_write.c $(BUILD)/plain/libcorestack.a | $(BUILD)
	$(CC) $(WARN) -O2 -I. $< $(BUILD)/plain/libcorestack.a $(LIBS) -o $@

bench-profile-write: $(BUILD)/bench-profile-write
	$(BUILD)/bench-profile-write 100000

bench-sampling: deps $(BUILD)/corestack $(BUILD)/bench-read-floor fixtures
	python3 tests/bench_sampling.py --corestack $(BUILD)/corestack

# What a recorder does to a program whose threads contend for the GVL.
bench-contention: deps $(BUILD)/corestack fixtures
	python3 tests/bench_contention.py --corestack $(BUILD)/corestack

# --pid on processes of 10,000 and 20,000 parked threads: time and pause.
bench-pause: deps $(BUILD)/corestack fixtures
	python3 tests/bench_pause.py --corestack $(BUILD)/corestack

# The long seeded mutation run (make test runs a dozen seeds per class).
mutate: deps $(BUILD)/corestack-san fixtures
	python3 tests/mutate.py --corestack $(BUILD)/corestack-san

bench-gdbext: deps gdbext fixtures
	python3 tests/bench_gdbext.py --gdbext $(GDBEXT_DIR)

# The layering of the tree (tests/tools/check_layers.py: no folder includes
# from one above it, no cycle, no target internals above the engine), then
# static analysis with Debian's cppcheck and clang-tidy (.clang-tidy):
# both must be clean, and the C must be as clang-format (.clang-format)
# writes it. `make format` rewrites it so. Fixtures whose line numbers
# tests check (fixtures/, the DWARF sample, the fuzzers' native target)
# are left as they are.
LINT_SRC   := $(LIB_SRC) $(wildcard corestack/*.c) $(GDBEXT_SRC)
FORMAT_SRC := $(filter-out tests/unit/dwarf_sample.% tests/fuzz/native_target.c, \
              $(wildcard $(addsuffix /*.[ch],$(LAYERS) corestack gdbext) \
                         tests/unit/*.[ch] \
                         tests/unit/*/*.[ch] tests/tools/*.c tests/fuzz/*.[ch] \
                         tests/bench/*.c))
lint:
	python3 tests/tools/check_layers.py .
	clang-format --dry-run --Werror $(FORMAT_SRC)
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--inline-suppr --std=c11 -D_GNU_SOURCE -I. $(LINT_SRC)
	printf '%s\n' $(LINT_SRC) | xargs -n 8 -P $$(nproc) sh -c \
		'clang-tidy --quiet "$$@" -- -std=c17 -D_GNU_SOURCE -I. $(PY_CFLAGS)' clang-tidy

format:
	clang-format -i $(FORMAT_SRC)

clean:
	rm -rf $(BUILD)
include tests/fuzz/Makefile.inc
