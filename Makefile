# corestack — see README.md.  `make` builds, `make test` runs every test,
# `make demo` shows corestack on a core of a fixture scenario.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror
LIBS    := -ldw -lelf -ldebuginfod -lzstd -llzma -lz
BUILD   := build

ENGINE_SRC := $(wildcard util/*.c dwarf/*.c rubyvm/*.c)
CLI_SRC    := $(wildcard corestack/*.c)
# The core and live targets and the profile, for the unit tests.
TARGET_SRC := corestack/core.c corestack/link_map.c corestack/live.c \
              corestack/live_signal.c corestack/build_id.c \
              corestack/page_cache.c corestack/profile.c corestack/flamegraph.c \
              corestack/decompress.c
SRC        := $(ENGINE_SRC) $(CLI_SRC)
HDR        := $(wildcard util/*.h dwarf/*.h rubyvm/*.h rubyvm/*.def corestack/*.h)

SAN_FLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=all

.PHONY: all test unit demo deps fixtures clean bench gdbext gdbext-san install bench-gdbext \
        bench-sampling bench-contention mutate bench-pause
all: $(BUILD)/corestack gdbext

$(BUILD)/corestack: $(SRC) $(HDR) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(SRC) $(LIBS) -o $@

# The same program under AddressSanitizer and UBSan: what the tests run.
$(BUILD)/corestack-san: $(SRC) $(HDR) | $(BUILD)
	$(CC) $(WARN) $(SAN_FLAGS) $(SRC) $(LIBS) -o $@

$(BUILD):
	mkdir -p $@

# gdbext: the CPython extension gdb and lldb load (stable ABI: one .so for
# any Python 3.7+), the engine and the CLI's readers compiled into it, and
# the loaders next to it. Symbols stay inside: no clash with the debugger's.
GDBEXT_SRC := $(ENGINE_SRC) $(filter-out corestack/main.c,$(CLI_SRC)) \
              $(wildcard gdbext/*.c)
GDBEXT_HDR := $(HDR) $(wildcard gdbext/*.h)
GDBEXT_DIR := $(BUILD)/gdbext
GDBEXT_SO  := $(GDBEXT_DIR)/_corestack.abi3.so
GDBEXT_PY  := $(GDBEXT_DIR)/ruby-gdb.py $(GDBEXT_DIR)/ruby_lldb.py
PY_CFLAGS  := $(shell pkg-config --cflags python3 2>/dev/null)
gdbext: $(GDBEXT_SO) $(GDBEXT_PY)

$(GDBEXT_SO): $(GDBEXT_SRC) $(GDBEXT_HDR) | $(GDBEXT_DIR)
	$(CC) $(WARN) $(CFLAGS) $(PY_CFLAGS) -fPIC -shared -fvisibility=hidden \
		-Wl,-Bsymbolic -pthread $(GDBEXT_SRC) $(LIBS) -o $@

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

$(GDBEXT_SAN_DIR)/_corestack.abi3.so: $(GDBEXT_SRC) $(GDBEXT_HDR) | $(GDBEXT_SAN_DIR)
	$(CC) $(WARN) $(GDBEXT_SAN_FLAGS) $(PY_CFLAGS) -fPIC -shared \
		-fvisibility=hidden -Wl,-Bsymbolic -pthread $(GDBEXT_SRC) $(LIBS) -o $@

$(GDBEXT_SAN_DIR)/%.py: gdbext/%.py | $(GDBEXT_SAN_DIR)
	cp $< $@

$(GDBEXT_SAN_DIR):
	mkdir -p $@

# make install [PREFIX=/usr/local] [DESTDIR=] [RUBY_FOR_GDB="ruby paths"]:
# corestack and its man page, the gdb/lldb module and loaders, and gdb auto-load scripts for
# the Rubies named (default: the ruby on PATH) under GDB_AUTOLOAD_DIR, and
# a snippet in gdb's system gdbinit directory (Debian's gdb reads
# /etc/gdb/gdbinit.d; GDB_SYSTEM_GDBINIT_DIR= leaves it out) that tells gdb
# to read and trust GDB_AUTOLOAD_DIR.
PREFIX           ?= /usr/local
SYSCONFDIR       ?= /etc
GDB_AUTOLOAD_DIR ?= $(PREFIX)/share/gdb/auto-load
GDB_SYSTEM_GDBINIT_DIR ?= $(SYSCONFDIR)/gdb/gdbinit.d
RUBY_FOR_GDB     ?= $(shell command -v ruby 2>/dev/null)
install: $(BUILD)/corestack gdbext
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/corestack
	install -m 755 $(BUILD)/corestack $(DESTDIR)$(PREFIX)/bin/corestack
	install -m 644 $(GDBEXT_SO) $(GDBEXT_PY) $(DESTDIR)$(PREFIX)/lib/corestack/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 docs/corestack.1 $(DESTDIR)$(PREFIX)/share/man/man1/corestack.1
	./gdbext/install-autoload.sh "$(DESTDIR)" "$(GDB_AUTOLOAD_DIR)" \
		"$(PREFIX)/lib/corestack/ruby-gdb.py" $(RUBY_FOR_GDB)
	if [ -n "$(GDB_SYSTEM_GDBINIT_DIR)" ]; then \
		install -d "$(DESTDIR)$(GDB_SYSTEM_GDBINIT_DIR)" && \
		sed 's|@GDB_AUTOLOAD_DIR@|$(GDB_AUTOLOAD_DIR)|g' gdbext/corestack.gdb.in \
			> "$(DESTDIR)$(GDB_SYSTEM_GDBINIT_DIR)/corestack.gdb"; fi

# Unit tests: one program per file in tests/unit, each on the engine.
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/%,$(UNIT_SRC))
$(BUILD)/test_%: tests/unit/test_%.c $(SRC) $(HDR) | $(BUILD)
	$(CC) $(WARN) $(SAN_FLAGS) -I. $< $(ENGINE_SRC) $(TARGET_SRC) $(LIBS) -o $@

# test_dwarf reads back the DWARF of a small library built like the
# fixture Rubies (-g3, compressed sections).
$(BUILD)/dwarf_sample.so: tests/unit/dwarf_sample.c tests/unit/dwarf_sample.h | $(BUILD)
	$(CC) -std=c17 -g3 -gz=zlib -O0 -shared -fPIC $< -o $@

# Checks tests/run.py runs on the fixtures' cores (tests/tools).
$(BUILD)/check-frame-reuse: tests/tools/check_frame_reuse.c $(SRC) $(HDR) | $(BUILD)
	$(CC) $(WARN) $(SAN_FLAGS) -I. $< $(ENGINE_SRC) $(TARGET_SRC) \
		corestack/image.c corestack/vm_module.c $(LIBS) -o $@

unit: $(UNIT_BIN) $(BUILD)/dwarf_sample.so
	@for t in $(UNIT_BIN); do $$t $(BUILD)/dwarf_sample.so || exit 1; done

# Everything a fresh Debian machine needs (apt packages).
deps:
	./.ci/install-deps

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
test: deps $(BUILD)/corestack-san $(UNIT_BIN) $(BUILD)/dwarf_sample.so fixtures fuzz-regress \
      gdbext gdbext-san $(BUILD)/check-frame-reuse
	python3 tests/run.py --corestack $(BUILD)/corestack-san \
		--frame-reuse-check $(BUILD)/check-frame-reuse \
		--unit "$(UNIT_BIN)" --unit-arg $(BUILD)/dwarf_sample.so \
		--gdbext $(GDBEXT_SAN_DIR)

demo: deps $(BUILD)/corestack
	./fixtures/demo.sh $(BUILD)/corestack

$(BUILD)/bench-inflate: tests/bench/inflate.c | $(BUILD)
	$(CC) $(WARN) -O2 $< -lelf -o $@

bench: deps $(BUILD)/corestack $(BUILD)/bench-inflate fixtures
	python3 tests/bench.py --corestack $(BUILD)/corestack
	python3 tests/bench_sampling.py --corestack $(BUILD)/corestack

bench-sampling: deps $(BUILD)/corestack fixtures
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

clean:
	rm -rf $(BUILD)
include tests/fuzz/Makefile.inc
