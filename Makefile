# ringsum: build the io_uring BLAKE3 hashers and drive the benchmarks.
# `make sweep` and `make test` install what they need on a fresh Debian 12 machine.

BLAKE3_VERSION := 1.8.7
B3SUM_VERSION  := 1.8.7
# The same list resolves on Debian 12 and Ubuntu 24.04, but for perf, whose package names differ.
APT_PACKAGES   := liburing-dev libtbb-dev fio hyperfine xxhash spin time valgrind strace clang-14 libclang-rt-14-dev \
		  python3-venv help2man zsh chromium dpkg-dev lintian
OS_ID          := $(shell . /etc/os-release 2>/dev/null && echo $$ID)
PERF_PACKAGES  := $(if $(filter ubuntu,$(OS_ID)),linux-tools-common linux-tools-$(shell uname -r),linux-perf)
# The SSH fleet test's hosts (tests/test_fleet_ssh.py): an SSH server that is only a binary (no service
# is started), sudo for the hosts' non-root users.
FLEET_APT_PACKAGES := dropbear-bin sudo
PYTHON         ?= python3
comma          := ,
empty          :=
space          := $(empty) $(empty)

BUILD   := build
TOOLS   := .tools
VENV    := .venv
B3SUM   := $(TOOLS)/bin/b3sum
VENV_OK := $(VENV)/.installed
WHEELS_OK := $(BUILD)/wheels/.made
BYTECODE_OK := $(BUILD)/bytecode.made
PY_LOCK := harness/requirements.lock
BLAKE3  := $(BUILD)/vendor/blake3-$(BLAKE3_VERSION)/c
BLAKE3_LIB := $(BUILD)/blake3-serial/libblake3.a
# Hashing on every core, loaded by the programs when first needed (hashers/parallel_load.c), beside them.
PARALLEL_SO := lib/ringsum/parallel_hash.so
SWEEP_CONFIG ?= configs/quick.toml
SWEEP_FILE   ?= $(BUILD)/data/sweep-1G.bin
# pip extras of the venv: `fleet` is Ansible for `make fleet` (the fleet's hosts get EXTRAS= ).
EXTRAS       ?= test,fleet
INVENTORY    ?= hosts.ini
CONFIG       ?= configs/quick.toml

# Each file hashers/variants/<program>.c is a program, which describes itself there (RINGSUM_VARIANT):
# a new variant is a new file. Every other hashers/*.c is the core, linked into each program.
PROGRAMS := $(basename $(notdir $(wildcard hashers/variants/*.c)))
CORE     := $(basename $(notdir $(wildcard hashers/*.c)))
HEADERS  := $(wildcard hashers/*.h)
# The man page's NAME: the variant's .summary.
summary   = $(shell sed -n 's/^[[:space:]]*\.summary = "\(.*\)",$$/\1/p' hashers/variants/$(1).c)
# Text inside '...' for the shell: each ' closes the quote, adds an escaped one and reopens.
shell_quoted = $(subst ','\'',$(1))

LIBURING_VERSION = $(shell dpkg-query -W -f='$${Version}' liburing-dev 2>/dev/null)
CFLAGS  ?= -O3 -g
CFLAGS  += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -pthread -I$(BLAKE3) \
	   -DRINGSUM_LIBURING_VERSION='"$(LIBURING_VERSION)"'
LDLIBS  := -luring -pthread

# SIMD levels below the CPU's (a machine condition of harness/conditions/spec.py): BLAKE3 built without
# its AVX-512 code, or without AVX-512 and AVX2, by its own defines; the hashers in simd-<level>/bin.
SIMD_LEVELS   := avx2 sse41
# Build flavours, each in its own tree so that they coexist.
# blake3join's parallel_hash.so has BLAKE3's own TBB join instead of hashers/parallel_hash.cpp, for `make bench`.
# LIB_<flavour>: its BLAKE3 library, when not $(BLAKE3_LIB); SO_<flavour>: its parallel_hash.so, when not
# $(BUILD)/pic's.
FLAVOURS      := release notrace asan tsan faults blake3join $(SIMD_LEVELS)
DIR_release   := $(BUILD)
DIR_notrace   := $(BUILD)/notrace
DIR_asan      := $(BUILD)/asan
DIR_tsan      := $(BUILD)/tsan
DIR_faults    := $(BUILD)/faults
DIR_blake3join := $(BUILD)/blake3join
FLAGS_release :=
FLAGS_notrace := -DRINGSUM_NO_TRACE
FLAGS_asan    := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FLAGS_tsan    := -O1 -fsanitize=thread
FLAGS_faults  := -DRINGSUM_FAULTS
FLAGS_blake3join := -DRINGSUM_BLAKE3_JOIN
SO_blake3join := $(BUILD)/pic/blake3join/parallel_hash.so
# SIMD levels (machine conditions, harness/conditions/spec.py): the hashers in simd-<level>/bin.
NO_SIMD_avx2  := -DBLAKE3_NO_AVX512
NO_SIMD_sse41 := -DBLAKE3_NO_AVX512 -DBLAKE3_NO_AVX2
$(foreach l,$(SIMD_LEVELS),$(eval DIR_$(l) := $(BUILD)/simd-$(l))$(eval LIB_$(l) := $(BUILD)/simd-$(l)/blake3-serial/libblake3.a)$(eval SO_$(l) := $(BUILD)/simd-$(l)/pic/parallel_hash.so))
# A flavour's programs, and its list of them (share/ringsum/variants beside bin/), which the harness and tests read.
programs = $(foreach p,$(PROGRAMS),$(DIR_$(1))/bin/$(p))
bins = $(call programs,$(1)) $(DIR_$(1))/share/ringsum/variants $(DIR_$(1))/$(PARALLEL_SO)

.PHONY: all deps deps-apt docs structure test test-stress test-sanitize test-sanitize-machine bench bench-cli sweep ledger wisdom-effect wisdom-effect-tree fleet wheels lock check-power verify fuzz clean distclean \
	install uninstall man completions deb b3sum-suite simd
all: $(call bins,release)

define compile_rule
$(DIR_$(1))/obj/%.o: hashers/%.c $(HEADERS) | $(BLAKE3)/blake3.h /usr/include/liburing.h
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(FLAGS_$(1)) -c $$< -o $$@
$(DIR_$(1))/obj/variants/%.o: hashers/variants/%.c $(HEADERS) | $(BLAKE3)/blake3.h /usr/include/liburing.h
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(FLAGS_$(1)) -DRINGSUM_PROGRAM='"$$*"' -c $$< -o $$@
$(call programs,$(1)): $(DIR_$(1))/bin/%: $(DIR_$(1))/obj/variants/%.o $(foreach c,$(CORE),$(DIR_$(1))/obj/$(c).o) $(or $(LIB_$(1)),$(BLAKE3_LIB))
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(FLAGS_$(1)) $$^ -o $$@ $$(LDLIBS)
$(DIR_$(1))/share/ringsum/variants: $(call programs,$(1)) Makefile
	@mkdir -p $$(@D)
	printf '%s\n' $(PROGRAMS) > $$@
$(DIR_$(1))/$(PARALLEL_SO): $(or $(SO_$(1)),$(BUILD)/pic/parallel_hash.so)
	@mkdir -p $$(@D)
	cp $$< $$@
endef
$(foreach f,$(FLAVOURS),$(eval $(call compile_rule,$(f))))

# --- the official BLAKE3 C library, from the blake3 crate, built with SIMD assembly ---
# The programs link it serial (no TBB); parallel_hash.so is it again, position-independent and with TBB,
# with hashers/parallel_hash.cpp in the place of BLAKE3's blake3_tbb.cpp: the same join, with a grain
# (and its staging trials, hashers/staging_trial.cpp). The blake3join flavour's has BLAKE3's own join.
BLAKE3_C_SRCS := blake3.c blake3_dispatch.c blake3_portable.c
BLAKE3_S_SRCS := blake3_sse2_x86-64_unix.S blake3_sse41_x86-64_unix.S \
		 blake3_avx2_x86-64_unix.S blake3_avx512_x86-64_unix.S
BLAKE3_OBJS := $(BLAKE3_C_SRCS:.c=.o) $(BLAKE3_S_SRCS:.S=.o)
JOIN_OBJS := parallel_hash.o staging_trial.o
JOIN_DEPS := hashers/parallel_hash.h hashers/staging_trial.h
CXXFLAGS_JOIN := -std=c++20 -O3 -g -Wall -Wextra -fno-exceptions -fno-rtti -fPIC -fno-semantic-interposition \
		 -ftls-model=initial-exec -DBLAKE3_USE_TBB
# Only parallel_hash.h's entry points leave the library (hashers/parallel_hash.map).
LINK_SO = $(CXX) -shared -Wl,-Bsymbolic -Wl,-z,defs -Wl,--version-script=hashers/parallel_hash.map $(1) -o $@ -ltbb

# blake3_rules(dir, extra flags): a serial libblake3.a in dir/blake3-serial, parallel_hash.so in dir/pic
define blake3_rules
$(1)/blake3-serial/libblake3.a: $(addprefix $(1)/blake3-serial/,$(BLAKE3_OBJS))
	rm -f $$@
	$$(AR) rcs $$@ $$^
$(1)/pic/parallel_hash.so: $(addprefix $(1)/pic/,$(BLAKE3_OBJS) $(JOIN_OBJS)) hashers/parallel_hash.map
	$$(call LINK_SO,$$(filter %.o,$$^))
$(1)/blake3-serial/%.o: $(BLAKE3)/%.c | $(BLAKE3)/blake3.h
	@mkdir -p $$(@D)
	$$(CC) -O3 $(2) -c $$< -o $$@
$(1)/blake3-serial/%.o: $(BLAKE3)/%.S | $(BLAKE3)/blake3.h
	@mkdir -p $$(@D)
	$$(CC) -c $$< -o $$@
$(1)/pic/%.o: $(BLAKE3)/%.S | $(BLAKE3)/blake3.h
	@mkdir -p $$(@D)
	$$(CC) -c $$< -o $$@
$(1)/pic/%.o: $(BLAKE3)/%.c | $(BLAKE3)/blake3.h
	@mkdir -p $$(@D)
	$$(CC) -O3 -fPIC -fno-semantic-interposition -DBLAKE3_USE_TBB $(2) -c $$< -o $$@
# Debian 12's TBB (2021.8) is older than BLAKE3's CMake check wants; the source itself builds fine.
$(1)/pic/%.o: hashers/%.cpp $(JOIN_DEPS) | $(BLAKE3)/blake3.h /usr/include/oneapi/tbb.h
	@mkdir -p $$(@D)
	$$(CXX) $(CXXFLAGS_JOIN) $(2) -I$(BLAKE3) -c $$< -o $$@
endef
$(eval $(call blake3_rules,$(BUILD),))
$(foreach l,$(SIMD_LEVELS),$(eval $(call blake3_rules,$(DIR_$(l)),$(NO_SIMD_$(l)))))

$(SO_blake3join): $(addprefix $(BUILD)/pic/,$(BLAKE3_OBJS)) $(BUILD)/pic/blake3join/blake3_tbb.o \
		  $(BUILD)/pic/blake3join/hash_parallel_plain.o hashers/parallel_hash.map
	$(call LINK_SO,$(filter %.o,$^))
$(BUILD)/pic/blake3join/hash_parallel_plain.o: hashers/parallel_hash.cpp $(JOIN_DEPS) | $(BLAKE3)/blake3.h /usr/include/oneapi/tbb.h
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_JOIN) -DRINGSUM_BLAKE3_JOIN -I$(BLAKE3) -c $< -o $@
$(BUILD)/pic/blake3join/blake3_tbb.o: $(BLAKE3)/blake3_tbb.cpp | $(BLAKE3)/blake3.h /usr/include/oneapi/tbb.h
	@mkdir -p $(@D)
	$(CXX) -std=c++20 -O3 -fPIC -fno-exceptions -fno-rtti -DBLAKE3_USE_TBB -c $< -o $@

# The fetch brings every source file along with the header.
$(addprefix $(BLAKE3)/,$(BLAKE3_C_SRCS) $(BLAKE3_S_SRCS) blake3_tbb.cpp): $(BLAKE3)/blake3.h ;
$(BLAKE3)/blake3.h:
	@command -v cargo >/dev/null || { echo "fatal: cargo not found; install Rust (rustup) to fetch BLAKE3"; exit 1; }
	@mkdir -p $(BUILD)/blake3-fetch/src
	@printf '[package]\nname = "ringsum-blake3-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\nblake3 = "=$(BLAKE3_VERSION)"\n' > $(BUILD)/blake3-fetch/Cargo.toml
	@touch $(BUILD)/blake3-fetch/src/lib.rs
	cd $(BUILD)/blake3-fetch && cargo vendor --quiet --versioned-dirs ../vendor > /dev/null
	@test -f $@ && touch $@

# --- set-up: Debian packages (only what is missing), b3sum, the Python venv ---
deps: deps-apt $(BLAKE3)/blake3.h $(B3SUM) $(VENV_OK) $(BYTECODE_OK)

deps-apt:
	@missing=$$(for p in $(APT_PACKAGES) $(PERF_PACKAGES) $(FLEET_APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing from Debian:" $$missing; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi

# Made by deps-apt (once, also under make -j: two apt-get at once would fight over dpkg's lock).
/usr/include/liburing.h /usr/include/oneapi/tbb.h: | deps-apt ;

$(B3SUM):
	cargo install --locked --quiet b3sum --version $(B3SUM_VERSION) --root $(TOOLS)

# b3sum at each SIMD level, by the blake3 crate's own features, for the simd condition's baselines.
B3SUM_no_avx2  := blake3/no_avx512
B3SUM_no_sse41 := blake3/no_avx512,blake3/no_avx2
$(TOOLS)/simd-%/bin/b3sum:
	cargo install --locked --quiet b3sum --version $(B3SUM_VERSION) --features $(B3SUM_no_$*) --root $(TOOLS)/simd-$*

# Everything the simd condition runs: `ringsum run` names this target when a level is missing.
simd: $(foreach l,$(SIMD_LEVELS),$(call bins,$(l)) $(TOOLS)/simd-$(l)/bin/b3sum)

# Offline from wheels (a seeded fleet host: PIP_FIND_LINKS), pip installs itself from its own wheel
# into a venv made without one: ensurepip's older pip, then upgraded, took 6-13 s of a host's install,
# this 3 s. Either way ringsum is built by the venv's setuptools, pinned just before, not by a copy
# pip installs into an isolated build environment first (2 s).
PIP_WHEEL := $(firstword $(wildcard $(PIP_FIND_LINKS)/pip-*.whl))
$(VENV_OK): pyproject.toml $(PY_LOCK)
	$(PYTHON) -m venv $(if $(PIP_WHEEL),--without-pip) $(VENV)
	PIP_CONSTRAINT=$(abspath $(PY_LOCK)) $(if $(PIP_WHEEL),$(VENV)/bin/python $(PIP_WHEEL)/pip,$(VENV)/bin/pip) \
		install --quiet --upgrade pip setuptools
	PIP_CONSTRAINT=$(abspath $(PY_LOCK)) $(VENV)/bin/pip install --quiet --no-build-isolation \
		-e '.$(if $(EXTRAS),[$(EXTRAS)])'
	@touch $@

# The checkout's own modules compiled, as pip compiles the venv's: where PYTHONDONTWRITEBYTECODE is
# set (as in CI's environment) Python never writes them, and every `ringsum` process (a run, each
# cold round's prepare) compiled what it imports again, 0.13 s of CPU each.
PY_DIRS := harness analysis tests
$(BYTECODE_OK): $(shell find $(PY_DIRS) -name '*.py') | $(VENV_OK)
	$(VENV)/bin/python -m compileall -q $(PY_DIRS) > /dev/null
	@mkdir -p $(@D) && touch $@

# The lock file: what a fresh venv resolves to today, with every extra, as constraints for deps.
lock:
	rm -rf $(BUILD)/lock-venv && $(PYTHON) -m venv $(BUILD)/lock-venv
	$(BUILD)/lock-venv/bin/pip install --quiet --upgrade pip setuptools
	$(BUILD)/lock-venv/bin/pip install --quiet '.[test,fleet]'
	{ sed -n '/^#/p' $(PY_LOCK); $(BUILD)/lock-venv/bin/pip freeze --all --exclude ringsum; } > $(PY_LOCK).new
	mv $(PY_LOCK).new $(PY_LOCK)

TEST_HELPERS := $(BUILD)/tests/without_io_uring $(BUILD)/tests/side_pool_stress $(BUILD)/tests/side_pool_stress_tsan
$(BUILD)/tests/%: tests/helpers/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra $< -o $@
# hashers/side_pool.c alone, against a stand-in for BLAKE3 (tests/test_side_pool.py), plain and under TSan
$(BUILD)/tests/side_pool_stress_tsan: STRESS_FLAGS := $(FLAGS_tsan)
$(BUILD)/tests/side_pool_stress $(BUILD)/tests/side_pool_stress_tsan: tests/helpers/side_pool_stress.c hashers/side_pool.c \
		$(HEADERS) | $(BLAKE3)/blake3.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(STRESS_FLAGS) -Ihashers tests/helpers/side_pool_stress.c hashers/side_pool.c -o $@

# --- installing the hashers (GNU conventions: PREFIX, DESTDIR) ---
# A man page and bash and zsh completions per program, all made from its --help (hashers/options_help.c).
# AS_B3SUM=yes also installs uring_b3sum as b3sum (messages name the program as invoked).
PREFIX      ?= /usr/local
bindir      ?= $(PREFIX)/bin
datadir     ?= $(PREFIX)/share
# parallel_hash.so: the programs look for it in ../lib/ringsum from their own directory, so it goes
# beside bindir (a bindir of /opt/x/bin: /opt/x/lib/ringsum); install refuses a pkglibdir elsewhere
pkglibdir   ?= $(patsubst %/,%,$(dir $(bindir)))/lib/ringsum
man1dir     ?= $(datadir)/man/man1
bashcompdir ?= $(datadir)/bash-completion/completions
zshcompdir  ?= $(datadir)/zsh/site-functions
AS_B3SUM    ?= no
# The programs install puts in bindir and lists in datadir/ringsum/variants (the .deb's: uring_b3sum).
INSTALL_PROGRAMS ?= $(PROGRAMS)
INSTALL     ?= install
# The hashers' version, as --version says it (hashers/ringsum.h): the man pages' and the .deb's.
VERSION     := $(shell sed -n 's/^\#define RINGSUM_VERSION "\(.*\)"/\1/p' hashers/ringsum.h)
MAN_PAGES   := $(PROGRAMS:%=$(BUILD)/man/%.1)
COMPLETIONS := $(PROGRAMS:%=$(BUILD)/completions/bash/%) $(PROGRAMS:%=$(BUILD)/completions/zsh/_%) \
	       $(BUILD)/completions/bash/b3sum $(BUILD)/completions/zsh/_b3sum \
	       $(BUILD)/completions/bash/ringsum $(BUILD)/completions/zsh/_ringsum

$(BUILD)/man/%.1: $(BUILD)/bin/% | deps-apt
	@mkdir -p $(@D)
	help2man --no-info --no-discard-stderr --name='$(call shell_quoted,$(call summary,$*))' --version-string='$(VERSION)' ./$< > $@.new
	mv $@.new $@
$(BUILD)/completions/bash/b3sum: $(BUILD)/bin/uring_b3sum hashers/completion.py
	@mkdir -p $(@D)
	$(PYTHON) hashers/completion.py bash $< --name b3sum > $@
$(BUILD)/completions/zsh/_b3sum: $(BUILD)/bin/uring_b3sum hashers/completion.py
	@mkdir -p $(@D)
	$(PYTHON) hashers/completion.py zsh $< --name b3sum > $@
# ringsum's own, from its parser (harness/cli/completion.py): `source build/completions/bash/ringsum`.
$(BUILD)/completions/bash/ringsum $(BUILD)/completions/zsh/_ringsum: $(VENV_OK) $(wildcard harness/cli/*.py)
	@mkdir -p $(@D)
	$(VENV)/bin/python -m harness.cli.completion $(if $(findstring /bash/,$@),bash,zsh) > $@.new
	mv $@.new $@
$(BUILD)/completions/bash/%: $(BUILD)/bin/% hashers/completion.py
	@mkdir -p $(@D)
	$(PYTHON) hashers/completion.py bash $< > $@
$(BUILD)/completions/zsh/_%: $(BUILD)/bin/% hashers/completion.py
	@mkdir -p $(@D)
	$(PYTHON) hashers/completion.py zsh $< > $@

man: $(MAN_PAGES)
completions: $(COMPLETIONS)

install: all man completions
	@if [ "$$(realpath -m '$(bindir)/../lib/ringsum')" != "$$(realpath -m '$(pkglibdir)')" ]; then \
		echo "make install: pkglibdir=$(pkglibdir) is not $(bindir)/../lib/ringsum, where the programs look for parallel_hash.so" >&2; \
		exit 2; fi
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(man1dir) $(DESTDIR)$(bashcompdir) $(DESTDIR)$(zshcompdir) \
		$(DESTDIR)$(datadir)/ringsum $(DESTDIR)$(pkglibdir)
	$(INSTALL) -m 755 $(INSTALL_PROGRAMS:%=$(BUILD)/bin/%) $(DESTDIR)$(bindir)/
	$(INSTALL) -m 644 $(BUILD)/$(PARALLEL_SO) $(DESTDIR)$(pkglibdir)/
	printf '%s\n' $(INSTALL_PROGRAMS) > $(DESTDIR)$(datadir)/ringsum/variants
	chmod 644 $(DESTDIR)$(datadir)/ringsum/variants
	$(INSTALL) -m 644 $(INSTALL_PROGRAMS:%=$(BUILD)/man/%.1) $(DESTDIR)$(man1dir)/
	$(INSTALL) -m 644 $(INSTALL_PROGRAMS:%=$(BUILD)/completions/bash/%) $(DESTDIR)$(bashcompdir)/
	$(INSTALL) -m 644 $(INSTALL_PROGRAMS:%=$(BUILD)/completions/zsh/_%) $(DESTDIR)$(zshcompdir)/
ifeq ($(AS_B3SUM),yes)
	ln -sf uring_b3sum $(DESTDIR)$(bindir)/b3sum
	ln -sf uring_b3sum.1 $(DESTDIR)$(man1dir)/b3sum.1
	$(INSTALL) -m 644 $(BUILD)/completions/bash/b3sum $(DESTDIR)$(bashcompdir)/b3sum
	$(INSTALL) -m 644 $(BUILD)/completions/zsh/_b3sum $(DESTDIR)$(zshcompdir)/_b3sum
endif

# Removes what install put there, and b3sum only where it is our link (or its page and completions).
uninstall:
	rm -f $(INSTALL_PROGRAMS:%=$(DESTDIR)$(bindir)/%) $(INSTALL_PROGRAMS:%=$(DESTDIR)$(man1dir)/%.1) \
	      $(INSTALL_PROGRAMS:%=$(DESTDIR)$(bashcompdir)/%) $(INSTALL_PROGRAMS:%=$(DESTDIR)$(zshcompdir)/_%) \
	      $(DESTDIR)$(datadir)/ringsum/variants $(DESTDIR)$(pkglibdir)/parallel_hash.so
	-rmdir $(DESTDIR)$(datadir)/ringsum $(DESTDIR)$(pkglibdir) 2>/dev/null
	if [ "$$(readlink $(DESTDIR)$(bindir)/b3sum)" = uring_b3sum ]; then \
		rm -f $(DESTDIR)$(bindir)/b3sum $(DESTDIR)$(man1dir)/b3sum.1 \
		      $(DESTDIR)$(bashcompdir)/b3sum $(DESTDIR)$(zshcompdir)/_b3sum; fi

# --- the Debian package: lintian-clean, laid out as Debian would ship it ---
# uring_b3sum in /usr/bin, and b3sum through update-alternatives (packaging/debian/postinst, with its
# man page and completions as slaves). Debian's own b3sum package has no file in common with this one
# (its /usr/bin/b3sum and b3sum.1.gz are plain files, not an alternative), so both install: while it
# is installed its b3sum is the one on the PATH (update-alternatives leaves a file it does not manage
# alone) and ours answers as uring_b3sum; `update-alternatives --auto b3sum` after its removal.
# The comparison programs are not commands: they and their man pages live in /usr/lib/ringsum, a tree
# like the build's that `ringsum --bin-dir /usr/lib/ringsum/bin` runs (uring_b3sum linked in).
# Depends: dpkg-shlibdeps of the programs; the maintainer: DEB_MAINTAINER, or devscripts' DEBEMAIL.
DEB_REVISION   ?= 1
DEB_MAINTAINER ?= $(if $(DEBEMAIL),$(or $(DEBFULLNAME),ringsum developers) <$(DEBEMAIL)>,ringsum developers <ringsum@example.org>)
DEB_VERSION     = $(VERSION)-$(DEB_REVISION)
DEB_ARCH        = $(shell dpkg --print-architecture)
DEB             = $(BUILD)/uring-b3sum_$(DEB_VERSION)_$(DEB_ARCH).deb
# debhelper's layout, which dpkg-shlibdeps expects: the package's tree in debian/<package>.
DEB_WORK       := $(BUILD)/deb
DEB_ROOT       := $(DEB_WORK)/debian/uring-b3sum
DEB_LIB        := $(DEB_ROOT)/usr/lib/ringsum
DEB_DOC        := $(DEB_ROOT)/usr/share/doc/uring-b3sum
COMPARISONS    := $(filter-out uring_b3sum,$(PROGRAMS))
deb: all man completions | deps-apt
	rm -rf $(DEB_WORK) $(BUILD)/uring-b3sum_*.deb
	$(MAKE) --no-print-directory install DESTDIR=$(abspath $(DEB_ROOT)) PREFIX=/usr \
		zshcompdir=/usr/share/zsh/vendor-completions INSTALL_PROGRAMS=uring_b3sum >/dev/null
	$(INSTALL) -d $(DEB_LIB)/bin $(DEB_LIB)/share/ringsum $(DEB_LIB)/share/man/man1 \
		$(DEB_ROOT)/usr/share/ringsum/completions $(DEB_DOC) $(DEB_ROOT)/DEBIAN
	$(INSTALL) -m 755 $(COMPARISONS:%=$(BUILD)/bin/%) $(DEB_LIB)/bin/
	ln -s ../../../bin/uring_b3sum $(DEB_LIB)/bin/uring_b3sum
	$(INSTALL) -m 644 $(BUILD)/share/ringsum/variants $(DEB_LIB)/share/ringsum/
	$(INSTALL) -m 644 $(COMPARISONS:%=$(BUILD)/man/%.1) $(DEB_LIB)/share/man/man1/
	$(INSTALL) -m 644 $(BUILD)/completions/bash/b3sum $(BUILD)/completions/zsh/_b3sum $(DEB_ROOT)/usr/share/ringsum/completions/
	$(INSTALL) -m 644 packaging/debian/copyright $(DEB_DOC)/
	printf '%s\n' 'uring-b3sum ($(DEB_VERSION)) unstable; urgency=medium' '' \
		'  * ringsum $(VERSION): uring_b3sum, the comparison programs in /usr/lib/ringsum.' '' \
		' -- $(call shell_quoted,$(DEB_MAINTAINER))  '"$$(git log -1 --format=%aD 2>/dev/null || date -R)" \
		| gzip -9n > $(DEB_DOC)/changelog.Debian.gz
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/*.1 $(DEB_LIB)/share/man/man1/*.1
	strip --remove-section=.comment --remove-section=.note --strip-unneeded \
		$(DEB_ROOT)/usr/bin/uring_b3sum $(COMPARISONS:%=$(DEB_LIB)/bin/%) $(DEB_LIB)/parallel_hash.so
	$(INSTALL) -m 755 packaging/debian/postinst packaging/debian/prerm $(DEB_ROOT)/DEBIAN/
	printf 'Source: ringsum\n\nPackage: uring-b3sum\nArchitecture: any\n' > $(DEB_WORK)/debian/control
	cd $(DEB_WORK) && dpkg-shlibdeps -O debian/uring-b3sum/usr/bin/uring_b3sum \
		$(COMPARISONS:%=debian/uring-b3sum/usr/lib/ringsum/bin/%) debian/uring-b3sum/usr/lib/ringsum/parallel_hash.so > shlibs
	cd $(DEB_ROOT) && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums
	printf '%s\n' 'Package: uring-b3sum' 'Version: $(DEB_VERSION)' 'Architecture: $(DEB_ARCH)' \
		'Maintainer: $(call shell_quoted,$(DEB_MAINTAINER))' \
		"Installed-Size: $$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1)" \
		"Depends: $$(sed -n 's/^shlibs:Depends=//p' $(DEB_WORK)/shlibs)" \
		'Section: utils' 'Priority: optional' \
		'Description: BLAKE3 file hashing through io_uring, a drop-in for b3sum' \
		' uring_b3sum prints what b3sum $(B3SUM_VERSION) prints, reading files through an' \
		' io_uring ring and hashing them on every core. It is offered as b3sum' \
		' through update-alternatives. The other hashers of ringsum, which it is' \
		' measured against, are in /usr/lib/ringsum.' > $(DEB_ROOT)/DEBIAN/control
	chmod 644 $(DEB_ROOT)/DEBIAN/control $(DEB_ROOT)/DEBIAN/md5sums $(DEB_DOC)/changelog.Debian.gz
	dpkg-deb --root-owner-group --build $(DEB_ROOT) $(DEB)

# b3sum 1.8.7's own command-line tests (its tests/cli_tests.rs) against another program:
# built once, then b3sum's binary is swapped for B3SUM_UNDER_TEST (default: build/bin/uring_b3sum).
# A debug build: the b3sum it makes is never run, and the tests hash a few bytes (54 s of CPU in
# release, 36 s; each runs in 0.14 s either way).
B3SUM_UNDER_TEST ?= $(BUILD)/bin/uring_b3sum
B3SUM_SUITE      := $(BUILD)/b3sum-suite
$(B3SUM_SUITE)/.built:
	@command -v cargo >/dev/null || { echo "fatal: cargo not found; install Rust (rustup)"; exit 1; }
	rm -rf $(B3SUM_SUITE) && mkdir -p $(B3SUM_SUITE)/fetch/src
	printf '[package]\nname = "ringsum-b3sum-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\nb3sum = "=$(B3SUM_VERSION)"\n' > $(B3SUM_SUITE)/fetch/Cargo.toml
	touch $(B3SUM_SUITE)/fetch/src/lib.rs
	cd $(B3SUM_SUITE)/fetch && cargo vendor --quiet --versioned-dirs ../vendor > /dev/null
	cp -r $(B3SUM_SUITE)/vendor/b3sum-$(B3SUM_VERSION) $(B3SUM_SUITE)/crate
	cd $(B3SUM_SUITE)/crate && cargo test --quiet --locked --no-run
	touch $@
b3sum-suite: $(B3SUM_SUITE)/.built
	ln -sf $(abspath $(B3SUM_UNDER_TEST)) $(B3SUM_SUITE)/crate/target/debug/b3sum
	$$(ls -t $(B3SUM_SUITE)/crate/target/debug/deps/cli_tests-* | grep -v '\.d$$' | head -n 1) --test-threads 1

# --- the jobs ---
export PATH := $(CURDIR)/$(TOOLS)/bin:$(PATH)

# One worker per core (pytest-xdist): the modules that share the machine's state (the page cache,
# system settings, the run lock, wall time) run in one line on one worker, the independent ones
# beside them (tests/conftest.py). TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= auto
PYTEST := $(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# What the suite runs besides the release build (tests/test_unprivileged.py installs from the wheels;
# tests/test_sanitizers.py runs the hasher tests on the sanitizer builds).
TEST_NEEDS := deps all $(call bins,avx2) man completions $(B3SUM_SUITE)/.built $(call bins,notrace) $(call bins,faults) \
	      $(call bins,asan) $(call bins,tsan) $(TEST_HELPERS) $(WHEELS_OK)
test: $(TEST_NEEDS)
	$(PYTEST) --durations=12

# The whole suite STRESS_RUNS times under load (a busy process per core, an O_DIRECT reader of the
# disk): a test whose verdict depends on timing fails here first. Logs in build/stress/.
STRESS_RUNS ?= 3
test-stress: $(TEST_NEEDS)
	$(VENV)/bin/python tests/under_load.py --runs $(STRESS_RUNS) --logs $(BUILD)/stress -- \
		$(PYTEST) -p no:cacheprovider $(STRESS_TESTS)

# The hasher tests on the sanitizer builds: ASan+UBSan, and ThreadSanitizer for the programs with
# threads. `make test` runs them all: tests/test_hashers.py's part beside the machine line
# (tests/test_sanitizers.py), the line's own modules in it (tests/test_sanitizers_machine.py); here alone.
test-sanitize: test-sanitize-machine $(call bins,tsan)
	$(PYTEST) tests/test_sanitizers.py
test-sanitize-machine: deps $(call bins,asan) $(TEST_HELPERS)
	$(PYTEST) tests/test_sanitizers_machine.py

bench: deps all $(call bins,notrace) $(call bins,blake3join)
	rm -rf $(BUILD)/bench
	$(MAKE) --no-print-directory bench-cli
	$(VENV)/bin/ringsum run configs/bench-trace.toml --file $(SWEEP_FILE) --size 1G --out $(BUILD)/bench/trace
	$(VENV)/bin/python -m harness.bench $(BUILD)/bench/trace/*/
	$(VENV)/bin/ringsum run configs/bench-join.toml --file $(SWEEP_FILE) --size 1G --out $(BUILD)/bench/join
	$(VENV)/bin/python -m harness.bench $(BUILD)/bench/join/*/

# `ringsum --help`'s start-up against its target of 0.15 s (hyperfine, 31 runs; build/bench/cli-startup.json).
bench-cli: $(VENV_OK)
	$(VENV)/bin/python tests/bench_cli_startup.py

# The generated parts of the docs: the knob table (from the hashers' --knobs-json, as
# tests/test_knobs.py checks it) and every measured figure, from the run directories kept under
# docs/ (analysis/doc_figures.py; tests/test_doc_figures.py fails while one is out of date).
docs: $(VENV_OK) all
	COLUMNS=80 $(VENV)/bin/ringsum knobs --markdown > docs/knobs.md.new && mv docs/knobs.md.new docs/knobs.md
	$(VENV)/bin/python -m analysis.doc_figures
	rm -rf $(BUILD)/docs-report && $(VENV)/bin/python -m analysis docs/decisions/quick-run -o $(BUILD)/docs-report
	cp $(BUILD)/docs-report/ranking.png docs/images/ranking.png
	cp $(BUILD)/docs-report/heatmaps.png docs/images/heatmap.png

# The machine ledger's suites on this machine, one after another (at most 15 minutes, as root: cold
# runs drop the page cache, one core is a cpuset): the cold file on the disk and on a RAM device,
# the hot file, the cold and the hot 16,384-file tree, cached trees of small files, a file half
# cached. Each run is kept under
# docs/ledger/<fingerprint id>/ and the table in docs/ledger/README.md redrawn (docs/ledger.md).
LEDGER_RUNS = $(BUILD)/ledger
# The shape of this checkout (analysis/structure.py): packages, C calls, the run options' path, doc sizes.
structure: $(VENV_OK) $(BLAKE3)/blake3.h
	$(VENV)/bin/python -m analysis.structure

ledger: deps all
	rm -rf $(LEDGER_RUNS)
	$(VENV)/bin/ringsum run configs/ledger-cold.toml --file $(SWEEP_FILE) --size 1G --out $(LEDGER_RUNS)
	$(VENV)/bin/ringsum run configs/hot-staging.toml --file $(SWEEP_FILE) --size 1G --rounds 11 --out $(LEDGER_RUNS)
	$(VENV)/bin/ringsum run configs/ledger-tree-cold.toml --out $(LEDGER_RUNS)
	$(VENV)/bin/ringsum run configs/tree-hot.toml --out $(LEDGER_RUNS)
	$(VENV)/bin/ringsum run configs/ledger-memory-min.toml --out $(LEDGER_RUNS)
	$(VENV)/bin/ringsum run configs/ledger-partial.toml --file $(SWEEP_FILE) --size 1G --out $(LEDGER_RUNS)
	$(VENV)/bin/python -m analysis.ledger keep $(LEDGER_RUNS)/*/
	$(VENV)/bin/python -m analysis.doc_figures docs/ledger/README.md

# What `ringsum tune --install` does to uring_b3sum afterwards (configs/wisdom-effect.toml): a cold
# tune of one file installed into its own wisdom file, then no record, the record, and the tuned
# setting as an options file for every kind of work, cold and cached. About 6 minutes, as root.
WISDOM_EFFECT = $(BUILD)/wisdom-effect
WISDOM_FILE  ?= $(BUILD)/data/ringsum-256M.bin
wisdom-effect: deps all
	rm -rf $(WISDOM_EFFECT) && mkdir -p $(WISDOM_EFFECT)
	URING_B3SUM_WISDOM=$(abspath $(WISDOM_EFFECT))/wisdom $(VENV)/bin/ringsum tune --variant uring_b3sum \
		--file $(WISDOM_FILE) --size 256M --budget 3 --install --out $(WISDOM_EFFECT)
	cp $(WISDOM_EFFECT)/tune-*/tuned.options $(WISDOM_EFFECT)/tuned.options
	$(VENV)/bin/ringsum run configs/wisdom-effect.toml --file $(WISDOM_FILE) --out $(WISDOM_EFFECT)/runs
	$(VENV)/bin/ringsum run configs/wisdom-effect.toml --file $(WISDOM_FILE) --warm --out $(WISDOM_EFFECT)/runs

# The same for a tree (configs/wisdom-effect-tree.toml): 1 GiB in 256 directories, 16,384 files of
# 64 KiB (WISDOM_TREE_FILE_SIZE), a tune over configs/tune-trees.toml installed as the tree's record
# (cold; or cached with WISDOM_TREE_CACHE=warm, over configs/tune-trees-cached.toml with a 21-round
# final: a cached tree's), then cold and cached.
WISDOM_TREE = $(BUILD)/wisdom-effect-tree
WISDOM_TREE_CACHE ?= cold
WISDOM_TREE_FILE_SIZE ?= 64K
WISDOM_TREE_SPACE ?= configs/tune-trees$(if $(filter warm,$(WISDOM_TREE_CACHE)),-cached).toml
wisdom-effect-tree: deps all
	rm -rf $(WISDOM_TREE) && mkdir -p $(WISDOM_TREE)/tree
	for d in $$(seq -w 0 255); do mkdir $(WISDOM_TREE)/tree/d$$d && \
		head -c 4M /dev/urandom | split -b $(WISDOM_TREE_FILE_SIZE) -a 2 - $(WISDOM_TREE)/tree/d$$d/f || exit 1; done
	URING_B3SUM_WISDOM=$(abspath $(WISDOM_TREE))/wisdom $(VENV)/bin/ringsum tune --space $(WISDOM_TREE_SPACE) \
		--file $(WISDOM_TREE)/tree --install --out $(WISDOM_TREE) \
		$(if $(filter warm,$(WISDOM_TREE_CACHE)),--warm --final-rounds 21 --budget 6,--budget 3)
	cp $(WISDOM_TREE)/tune-*/tuned.options $(WISDOM_TREE)/tuned.options
	$(VENV)/bin/ringsum run configs/wisdom-effect-tree.toml --file $(WISDOM_TREE)/tree --out $(WISDOM_TREE)/runs
	$(VENV)/bin/ringsum run configs/wisdom-effect-tree.toml --file $(WISDOM_TREE)/tree --warm --out $(WISDOM_TREE)/runs

# A run that exits 1 (some executions failed) still gets its report; the exit status is kept.
sweep: deps all
	$(VENV)/bin/ringsum run $(SWEEP_CONFIG) --file $(SWEEP_FILE) --size 1G --out results --report

# A sweep on every host of an Ansible inventory (harness/fleet/playbook.yml), fetched into
# results/fleet/<host>/, then the fleet report. FLEET_ARGS passes more to ansible-playbook.
# The report is made whatever the playbook's exit: it names the hosts that failed, and exits 1 then.
fleet: deps
	$(VENV)/bin/ansible-playbook -i $(INVENTORY) harness/fleet/playbook.yml \
		-e ringsum_config=$(abspath $(CONFIG)) $(FLEET_ARGS); played=$$?; \
	$(VENV)/bin/ringsum collect results/fleet --out results/fleet && exit $$played

# The Python dependencies as wheels in build/wheels: the fleet's hosts install from them offline
# (the playbook's ringsum_seed), and tests/test_unprivileged.py into its user's venv. ringsum itself
# is installed from its source, never from a wheel that would be as old as this list.
$(WHEELS_OK): pyproject.toml $(PY_LOCK) | $(VENV_OK)
	PIP_CONSTRAINT=$(abspath $(PY_LOCK)) $(VENV)/bin/pip wheel --quiet -w $(BUILD)/wheels pip setuptools '.'
	rm -f $(BUILD)/wheels/ringsum-*.whl
	@touch $@
wheels: deps $(WHEELS_OK)

# The regression check's false alarms and detection rates (docs/regression-check.md; the table in
# docs/ledger/README.md), about 16 minutes
# on a 2-core VM: 20 checks of an identical build and of 5% more CPU work in the same rounds (and
# 1000 checks resampled from their rounds), then 5 of 10% and 20% more work, one read at a time and
# O_DIRECT dropped. Kept under docs/ledger/<fingerprint id>/check-power/ (the ledger's gate table).
# POWER_ARGS="--repeats 3" for a quick look (it still keeps what it measured: git shows the change).
check-power: deps all $(call bins,faults)
	rm -rf $(BUILD)/power/aa $(BUILD)/power/faults
	$(VENV)/bin/python -m harness.check.power --conditions unchanged,slow5 --repeats 20 --resampled 1000 \
		--out $(BUILD)/power/aa --keep docs/ledger $(POWER_ARGS)
	$(VENV)/bin/python -m harness.check.power --conditions slow10,slow20,depth1,buffered --repeats 5 \
		--out $(BUILD)/power/faults --keep docs/ledger $(POWER_ARGS)
	$(VENV)/bin/python -m analysis.doc_figures docs/ledger/README.md

# libFuzzer on the option parser (tests/test_fuzz_options.py has this built): the parser's files,
# what wisdom.c calls to sample a tree's first files as the walk takes them (residency.c, the walk
# and the checksum lines it may read, their UTF-8 rules), and the variants' table made from their
# RINGSUM_VARIANT lines, each row named by its file.
CLANG        ?= $(shell command -v clang-14 || command -v clang)
OPTION_SRCS  := $(addprefix hashers/,options.c knob_table.c options_help.c grammar_flags.c grammar_positional.c defaults_file.c wisdom.c)
FUZZ_OPTION_SRCS := $(OPTION_SRCS) $(addprefix hashers/,residency.c file_list.c checksum_file.c utf8.c)
$(BUILD)/gen/variant_table.h: $(wildcard hashers/variants/*.c)
	@mkdir -p $(@D)
	awk 'FNR == 1 { name = FILENAME; sub(/.*\//, "", name); sub(/\.c$$/, "", name) } \
	     /^RINGSUM_VARIANT\(/ { on = 1; sub(/^RINGSUM_VARIANT\(/, "VARIANT_ROW(\"" name "\", ") } \
	     on && /^\);/ { print ")"; on = 0 } on { print }' $^ > $@
$(BUILD)/fuzz/fuzz_options: tests/fuzz/fuzz_options.c $(FUZZ_OPTION_SRCS) $(HEADERS) $(BUILD)/gen/variant_table.h | $(BLAKE3)/blake3.h
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -DBLAKE3_USE_TBB -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Ihashers -I$(BLAKE3) -I$(BUILD)/gen \
		'-DRINGSUM_LIBURING_VERSION="fuzz"' tests/fuzz/fuzz_options.c $(FUZZ_OPTION_SRCS) -o $@

# libFuzzer on the option parser for FUZZ_SECONDS.
FUZZ_SECONDS ?= 300
fuzz: deps
	RINGSUM_FUZZ_SECONDS=$(FUZZ_SECONDS) flock "$$($(VENV)/bin/python -m harness.machine.state lock-path)" $(VENV)/bin/python -m pytest -q -s tests/test_fuzz_options.py

verify: deps-apt
	bash hashers/model/verify.sh

clean:
	rm -rf $(BUILD)/bin $(BUILD)/obj $(BUILD)/share $(BUILD)/gen $(BUILD)/blake3 $(BUILD)/blake3-serial $(BUILD)/pic $(BUILD)/lib $(BUILD)/tests $(BUILD)/fuzz $(foreach f,$(filter-out release,$(FLAVOURS)),$(DIR_$(f)))

distclean:
	rm -rf $(BUILD) $(TOOLS) $(VENV)
