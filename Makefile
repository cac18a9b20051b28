# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool: the only build entry.  GNU make, out-of-tree build in $(BUILD).
#   make            build/rdmatool and build/librdmacore.a
#   make check      every test (unit, integration, CLI consistency, check-verbs)
#   make check-verbs the device tests again, through libibverbs (rdmatool exec)
#   make deps       install build and test dependencies (Debian, as root)
#   make demo       run the main job on the soft device
#   make asan/tsan  the tests under AddressSanitizer+UBSan / ThreadSanitizer
#   make bench      the benchmarks, each against its same-run baseline
#   make lint       cppcheck over the tree
#   make mutation   seeded soft-device bugs against walk --verify and the soft unit tests (slow)
#   make install    PREFIX=/usr/local, DESTDIR, LIBDIR, SYSTEMDUNITDIR honoured
#   make check-unit the unit tests alone, needing no root and no test-only package (package builds)
#   WERROR=         warnings are not errors (packagers; -Wno-error in CFLAGS does the same)
#   make dist       rdmatool-VERSION.tar.gz of HEAD

BUILD    ?= build
PREFIX   ?= /usr/local
VERSION  := $(shell sed -n 's/^#define RDMATOOL_VERSION "\(.*\)"/\1/p' cmd/version.h)
# The man pages' .TH date and version come from cmd/version.h alone: man/*.1 say @DATE@ and @VERSION@.
MANDATE  := $(shell sed -n 's/^#define RDMATOOL_DATE "\(.*\)"/\1/p' cmd/version.h)
MAN_PAGES := $(patsubst man/%.1,$(BUILD)/man/%.1,$(wildcard man/*.1))
# The command names, from the command table: make install names the links without running the binary.
COMMANDS := $(shell sed -n 's/^[[:space:]]*{"\([a-z]*\)", cmd_[a-z]*,.*/\1/p' cmd/commands.c)

# Use every core unless the caller chose a job count (make -j1 for one).
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
CC       ?= gcc
PKGS     := libibverbs librdmacm libibumad libibmad popt libcrypto
SAN_CFLAGS ?=

# Asked of pkg-config on first use (a recipe), not when the Makefile is read:
# in `make deps demo` the packages only exist once the deps recipe has run.
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags $$(PKGS) 2>/dev/null))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $$(shell pkg-config --libs $$(PKGS) 2>/dev/null))$(PKG_LIBS)
CMOCKA_LIBS = $(eval CMOCKA_LIBS := $$(shell pkg-config --libs cmocka 2>/dev/null))$(CMOCKA_LIBS)

CFLAGS   ?= -O2 -g
# Warnings are errors for developers and CI; a packager's build (WERROR=, or -Wno-error in CFLAGS, as
# packaging/debian/rules and the RPM spec do) must not break on the next compiler's new warnings.
WERROR   ?= -Werror
ifneq ($(filter -Wno-error,$(CFLAGS)),)
WERROR   :=
endif
override CFLAGS   += -std=gnu11 -Wall -Wextra $(WERROR) -pthread $(SAN_CFLAGS)
override CPPFLAGS += -D_GNU_SOURCE -I. -MMD -MP $(PKG_CFLAGS)
override LDFLAGS  += -pthread $(SAN_CFLAGS)
override LDLIBS   += $(PKG_LIBS) -lm -lrt

CORE_SRC := $(sort $(filter-out hw/preload/%,$(wildcard core/*.c core/*/*.c core/*/*/*.c hw/*.c hw/*/*.c hw/*/*/*.c)))
# librdmatool-verbs.so: the soft device behind libibverbs' own API (rdmatool exec), position-independent.
VERBS_LIB_SRC := $(sort $(wildcard hw/preload/*.c hw/soft/*.c hw/soft/*/*.c))
VERBS_LIB_OBJ := $(VERBS_LIB_SRC:%.c=$(BUILD)/pic/%.o)
CMD_SRC  := $(sort $(filter-out cmd/main.c,$(wildcard cmd/*.c cmd/*/*.c)))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_HELPER_SRC := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_HELPER_OBJ := $(UNIT_HELPER_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# Helper programs integration tests start (e.g. a stats segment publisher).
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/tools/%)

RDMATOOL := $(BUILD)/rdmatool
VERBS_LIB := $(BUILD)/librdmatool-verbs.so
CORE_LIB := $(BUILD)/librdmacore.a
CMD_LIB  := $(BUILD)/librdmacmd.a

.PHONY: all check check-tcp check-verbs check-deps check-unit unit integration deps demo asan tsan bench lint install dist clean mutation fuzz

all: $(RDMATOOL) $(CORE_LIB) $(VERBS_LIB) $(MAN_PAGES)

$(BUILD)/man/%.1: man/%.1 cmd/version.h
	@mkdir -p $(dir $@)
	sed -e 's/@DATE@/$(MANDATE)/g' -e 's/@VERSION@/$(VERSION)/g' $< >$@

# Where make install puts the preload library: rdmatool exec looks there when it is not beside the binary.
# Debian passes its multiarch directory (/usr/lib/x86_64-linux-gnu), the RPM spec %{_libdir}.
LIBDIR   ?= $(PREFIX)/lib
# The agent's systemd unit (Type=simple over `rdmatool agent foreground`).
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
$(BUILD)/cmd/exec.o: override CPPFLAGS += -DRDMATOOL_PKGLIBDIR='"$(LIBDIR)/rdmatool"'

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# Only libibverbs' functions are exported (the version script); -z defs: nothing left unresolved.
$(VERBS_LIB): $(VERBS_LIB_OBJ) hw/preload/libibverbs.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,librdmatool-verbs.so -Wl,--version-script=hw/preload/libibverbs.map \
		-Wl,-z,defs -o $@ $(VERBS_LIB_OBJ) -lcrypto -ldl

$(CORE_LIB): $(CORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(CMD_LIB): $(CMD_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(RDMATOOL): $(BUILD)/cmd/main.o $(CMD_LIB) $(CORE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(UNIT_HELPER_OBJ) $(CMD_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(UNIT_HELPER_OBJ) $(CMD_LIB) $(CORE_LIB) $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/tools/%: tests/tools/%.c $(CMD_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(CMD_LIB) $(CORE_LIB) $(LDFLAGS) $(LDLIBS)

check-deps:
	@tests/deps.sh check

# The integration tests that run a second time with rdmatool on the real-NIC code path
# (libibverbs, hw/verbs.c) against the preloaded soft device, softv0: tests/run-tests.sh
# runs verbs:PATH through tests/integration/lib/via-verbs.  The rest use no device, or
# test what a hostile peer or user sends, which the device path does not change.
VERBS_TESTS := $(addprefix verbs:tests/integration/,walk_basic.sh walk_verify.sh walk_multinode.sh \
  walk_replay.sh bench_smoke.sh cqstat_basic.sh cqstat_bench.sh cqstat_walk.sh agent_daemon.sh \
  agent_bench.sh agent_net.sh)

# One runner for everything, so the summary line counts every test.
check: check-deps all $(UNIT_BIN) $(TOOL_BIN)
	@BUILD=$(BUILD) tests/run-tests.sh $(UNIT_BIN) $(sort $(wildcard tests/integration/*.sh)) $(VERBS_TESTS)

# The two-process device tests once more on the TCP wire (RDMATOOL_SOFT_SHM=0); make check runs
# this script too, everything else on the shared-memory wire local peers get by default.
check-tcp: check-deps all $(UNIT_BIN) $(TOOL_BIN)
	@BUILD=$(BUILD) tests/run-tests.sh tests/integration/soft_wire_tcp.sh

check-verbs: check-deps all $(TOOL_BIN)
	@BUILD=$(BUILD) tests/run-tests.sh $(VERBS_TESTS)

unit: check-deps all $(UNIT_BIN)
	@BUILD=$(BUILD) tests/run-tests.sh $(UNIT_BIN)

# The unit tests a package build runs (dh_auto_test, %check): no root, no test-only packages
# (check-deps), only the build dependencies (cmocka) and loopback.
# Package builds: the stats segments go to a private directory (a build chroot's /dev/shm may be
# missing or shared); make check keeps /dev/shm and its leftover check.
check-unit: all $(UNIT_BIN)
	@d=$$(mktemp -d) && BUILD=$(BUILD) RDMATOOL_STATS_DIR=$$d tests/run-tests.sh $(UNIT_BIN); rc=$$?; rm -rf "$$d"; exit $$rc

integration: check-deps all $(TOOL_BIN)
	@BUILD=$(BUILD) tests/run-tests.sh $(sort $(wildcard tests/integration/*.sh))

# DEPS_INSTALL is a hook for tests/integration/make_deps_fresh.sh.
DEPS_INSTALL ?= tests/deps.sh install
deps:
	@$(DEPS_INSTALL)

# In `make deps demo` (parallel or not) nothing compiles before deps ran.
ifneq ($(filter deps,$(MAKECMDGOALS)),)
check-deps $(BUILD)/cmd/main.o $(CORE_OBJ) $(CMD_OBJ) $(VERBS_LIB_OBJ) $(UNIT_HELPER_OBJ) \
  $(UNIT_BIN) $(TOOL_BIN): | deps
endif

demo: check-deps all
	$(RDMATOOL) walk --clients=5 --duration=20 --multinode=false

ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
asan:
	$(MAKE) BUILD=build-asan SAN_CFLAGS="$(ASAN_FLAGS)" CFLAGS="-O1 -g" check

# The suppressions cover code that is not ours (umad2sim) and the soft NIC's
# stand-in for DMA (hw/soft/dma.c); see the file for why.
tsan:
	TSAN_OPTIONS="suppressions=$(CURDIR)/tests/sanitizers/tsan.supp $$TSAN_OPTIONS" \
	  $(MAKE) BUILD=build-tsan SAN_CFLAGS="-fsanitize=thread" CFLAGS="-O1 -g" check

bench: check-deps all $(BUILD)/tests/tools/cpu_line_rtt
	@BUILD=$(BUILD) tests/bench.sh
	@BUILD=$(BUILD) tests/perftest_bench.sh

# Not part of check: every seeded bug, walk --verify on 3 seeds of 20 s each, and the soft unit tests;
# MUTATION_ARGS takes run.sh's options (-m: one multinode walk too; -U; NAME... for a subset).
mutation: check-deps all
	@BUILD=$(BUILD) tests/mutation/run.sh $(MUTATION_ARGS)

# Not part of check: the libFuzzer target of the agents' wire parser (tests/fuzz/proto_fuzz.c),
# built with clang and run for FUZZ_SECONDS on a corpus kept in $(BUILD)/fuzz/corpus.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
fuzz:
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || { echo "make fuzz: $(FUZZ_CC) not found;" \
	  "it needs clang with libFuzzer: apt-get install clang (or give FUZZ_CC=clang-NN)" >&2; exit 1; }
	@mkdir -p $(BUILD)/fuzz/corpus
	$(FUZZ_CC) -D_GNU_SOURCE -I. -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $(BUILD)/fuzz/proto_fuzz tests/fuzz/proto_fuzz.c core/agent/proto.c
	$(BUILD)/fuzz/proto_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4200 $(BUILD)/fuzz/corpus

lint:
	cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem -I. cmd core hw tests/unit

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 755 $(RDMATOOL) $(DESTDIR)$(PREFIX)/bin/rdmatool
	install -d $(DESTDIR)$(LIBDIR)/rdmatool
	install -m 644 $(VERBS_LIB) $(DESTDIR)$(LIBDIR)/rdmatool/librdmatool-verbs.so
	for c in $(COMMANDS); do ln -sf rdmatool $(DESTDIR)$(PREFIX)/bin/rdmatool-$$c; done
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 completions/rdmatool.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rdmatool
	for c in $(COMMANDS); do \
	  ln -sf rdmatool $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rdmatool-$$c; done
	install -m 644 completions/_rdmatool $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_rdmatool
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|@BINDIR@|$(PREFIX)/bin|g' packaging/rdmatool-agent.service >$(DESTDIR)$(SYSTEMDUNITDIR)/rdmatool-agent.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/rdmatool-agent.service

# The release tarball (rpmbuild's Source0, Debian's orig tarball): the committed tree at HEAD.
dist:
	git archive --format=tar.gz --prefix=rdmatool-$(VERSION)/ -o rdmatool-$(VERSION).tar.gz HEAD
	@echo rdmatool-$(VERSION).tar.gz

clean:
	rm -rf build build-asan build-tsan

-include $(CORE_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(BUILD)/cmd/main.d $(UNIT_HELPER_OBJ:.o=.d) $(UNIT_BIN:=.d) $(TOOL_BIN:=.d) $(VERBS_LIB_OBJ:.o=.d)
