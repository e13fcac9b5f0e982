# snowflake: PGXS build of the extension (C++17 core + PostgreSQL glue).
#
#   make && make install      build and install into the pg_config found first
#                             (PG_CONFIG=/usr/lib/postgresql/NN/bin/pg_config to
#                             choose; scripts/install.sh chooses for you)
#   make WERROR=1             warnings are errors: the project's own builds (the
#                             test scripts and CI pass it), not a user's build,
#                             which a newer compiler's new warning must not break
#   make install-upgrade-hook the pg_upgradecluster hook (Debian's
#                             postgresql-common) for this major, as the Debian
#                             package installs it (doc/upgrading.md)
#   make installcheck         pg_regress against a running server that preloads
#                             snowflake (scripts/test.sh sets one up), or, with
#                             EXTRA_REGRESS_OPTS="--temp-instance=tmp_check
#                             --temp-config=test/pg_regress.conf", in a temporary
#                             instance that pg_regress makes (as any user but
#                             root); REGRESS=nextval runs one file
#   make prove_installcheck   the cluster tests (test/t/, or PROVE_TESTS=
#                             test/t/NNN_name.pl) against the installed server and
#                             snowflake, as PGXS runs TAP tests (any user but root)
#
# C++ with PGXS, handled on purpose:
# - PostgreSQL headers come in through -isystem, so -Wextra -Werror judge our
#   code and not theirs;
# - the LLVM bitcode rule for .cpp files (JIT inlining) does not see
#   PG_CXXFLAGS, so -std=c++17 is added to BITCODE_CXXFLAGS as well;
# - the module links libstdc++ explicitly (PostgreSQL's link line is C);
# - PGXS tracks no header dependencies here, so -MMD writes them (.d files):
#   a changed header rebuilds every object that includes it.

EXTENSION = snowflake
MODULE_big = snowflake
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)

# Objects in subfolders (src/pg/registry/) keep their path: PGXS installs
# their bitcode under $(pkglibdir)/bitcode/snowflake/src/pg/registry/ and
# names them so in the JIT's index.
CORE_OBJS = $(patsubst %.cpp,%.o,$(wildcard src/core/*.cpp))
GLUE_OBJS = $(patsubst %.cpp,%.o,$(wildcard src/pg/*.cpp src/pg/bound/*.cpp src/pg/registry/*.cpp))
OBJS = $(CORE_OBJS) $(GLUE_OBJS)
DATA = $(wildcard sql/$(EXTENSION)--*.sql)

REGRESS = $(patsubst sql/%.sql,%,$(filter-out sql/$(EXTENSION)--%,$(wildcard sql/*.sql)))
# --load-extension: the database of the tests has the extension before the
# first file runs, so that each file runs alone (REGRESS=nextval) as in the
# whole suite.
REGRESS_OPTS = --inputdir=. --outputdir=$(or $(REGRESS_OUTPUTDIR),.) --load-extension=$(EXTENSION)

# Before the include: PGXS's clean rule tests EXTRA_CLEAN when it is read.
EXTRA_CLEAN = $(OBJS:.o=.d) .build-for

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -isystem $(shell $(PG_CONFIG) --includedir-server)
PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir)  # libpq-fe.h (registry)
PG_CPPFLAGS += -DSNOWFLAKE_VERSION='"$(EXTVERSION)"'  # PG_MODULE_MAGIC_EXT (18)
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Wshadow -fno-strict-aliasing -MMD -MP
WERROR ?=
ifneq ($(filter 1 yes -Werror,$(WERROR)),)
PG_CXXFLAGS += -Werror
endif
# PGXS adds PROFILE (make PROFILE=...: the sanitize layer's -fsanitize flags)
# to the C flags and the link only; the C++ sources take it too.
PG_CXXFLAGS += $(PROFILE)
SHLIB_LINK = -lstdc++
SHLIB_LINK += -lpq  # the registry's client
SHLIB_LINK += -lcrypto  # OpenSSL's AES for FF1 (src/core/ff1.cpp: public IDs)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

override BITCODE_CXXFLAGS += -std=c++17

# PGXS runs TAP tests (its prove_installcheck recipe: servers of the installed
# PostgreSQL, data and logs in tmp_check/) only from installcheck with
# TAP_TESTS, which would add every cluster test to pg_regress's suite: the
# target of its own runs them alone, with the tests' helpers (test/perl).
PROVE_TESTS ?= $(wildcard test/t/*.pl)
PG_PROVE_FLAGS += -I $(srcdir)/test/perl
.PHONY: prove_installcheck
prove_installcheck:
	$(prove_installcheck)
-include $(OBJS:.o=.d)

# Objects built for another PostgreSQL (another PG_CONFIG, or a minor with
# other headers) or with(out) WERROR are rebuilt: the stamp holds what they
# were built for and changes only when that does. Without it, `make` for one
# major after a build for another linked the old objects (and a build with
# WERROR=1 after one without judged nothing).
BUILD_STAMP = .build-for
BUILD_FOR := $(PG_CONFIG) $(shell $(PG_CONFIG) --version) WERROR=$(WERROR)
$(BUILD_STAMP): FORCE
	@echo '$(BUILD_FOR)' | cmp -s - $@ || echo '$(BUILD_FOR)' >$@
$(OBJS) $(OBJS:.o=.bc): $(BUILD_STAMP)
.PHONY: FORCE
FORCE:

# Debian's pg_upgradecluster runs the hooks in this directory; the package
# installs debian/pg_upgradecluster-hook there as snowflake-NN (debian/rules),
# and this target does the same for a build from source. A file the package
# installed (dpkg owns it) is left alone.
UPGRADE_HOOK_DIR = /etc/postgresql-common/pg_upgradecluster.d
UPGRADE_HOOK = $(UPGRADE_HOOK_DIR)/snowflake-$(MAJORVERSION)
.PHONY: install-upgrade-hook
install-upgrade-hook:
	@if [ -z "$(DESTDIR)" ] && [ ! -x /usr/bin/pg_upgradecluster ]; then \
		echo "no pg_upgradecluster here (Debian's postgresql-common): no hook to install"; \
	elif [ -x '$(DESTDIR)$(UPGRADE_HOOK)' ] && cmp -s debian/pg_upgradecluster-hook '$(DESTDIR)$(UPGRADE_HOOK)'; then \
		echo "the pg_upgradecluster hook is installed already ($(DESTDIR)$(UPGRADE_HOOK))"; \
	elif [ -z "$(DESTDIR)" ] && dpkg-query -S '$(UPGRADE_HOOK)' >/dev/null 2>&1; then \
		echo "$(UPGRADE_HOOK) belongs to a package ($$(dpkg-query -S '$(UPGRADE_HOOK)' | cut -d: -f1)): left as it is"; \
	else \
		install -D -m 755 debian/pg_upgradecluster-hook '$(DESTDIR)$(UPGRADE_HOOK)' && \
		echo "installed the pg_upgradecluster hook as $(DESTDIR)$(UPGRADE_HOOK)"; \
	fi

.PHONY: format format-check
FORMATTED = $(wildcard src/core/*.?pp src/pg/*.?pp src/pg/bound/*.?pp src/pg/registry/*.?pp test/unit/*.cpp test/bench/core/*.cpp test/fuzz/*.?pp test/sanitize/*.cpp test/simulation/*.?pp)
format:
	clang-format -i $(FORMATTED)
format-check:
	clang-format --dry-run -Werror $(FORMATTED)

# PGXN: `make dist` writes snowflake-VERSION.zip from the committed tree (HEAD):
# one top folder snowflake-VERSION with META.json at its root, no build
# outputs, no .git. `pgxn install ./snowflake-VERSION.zip` builds and installs it.
DISTVERSION = $(shell sed -n 's/^   "version": "\(.*\)",$$/\1/p' META.json)
.PHONY: dist
dist:
	git archive --format=zip --prefix=$(EXTENSION)-$(DISTVERSION)/ -o $(EXTENSION)-$(DISTVERSION).zip HEAD
	@echo "wrote $(EXTENSION)-$(DISTVERSION).zip"
