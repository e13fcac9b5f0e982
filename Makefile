# snowflake: PGXS build of the extension (C++17 core + PostgreSQL glue).
#
#   make && make install      build and install into the pg_config found first
#   make installcheck         pg_regress against a running server that preloads
#                             snowflake (scripts/test.sh sets one up)
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
REGRESS_OPTS = --inputdir=. --outputdir=$(or $(REGRESS_OUTPUTDIR),.)

# Before the include: PGXS's clean rule tests EXTRA_CLEAN when it is read.
EXTRA_CLEAN = $(OBJS:.o=.d)

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -isystem $(shell $(PG_CONFIG) --includedir-server)
PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir)  # libpq-fe.h (registry)
PG_CPPFLAGS += -DSNOWFLAKE_VERSION='"$(EXTVERSION)"'  # PG_MODULE_MAGIC_EXT (18)
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Wshadow -Werror -fno-strict-aliasing -MMD -MP
# PGXS adds PROFILE (make PROFILE=...: the sanitize layer's -fsanitize flags)
# to the C flags and the link only; the C++ sources take it too.
PG_CXXFLAGS += $(PROFILE)
SHLIB_LINK = -lstdc++
SHLIB_LINK += -lpq  # the registry's client
SHLIB_LINK += -lcrypto  # OpenSSL's AES for FF1 (src/core/ff1.cpp: public IDs)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

override BITCODE_CXXFLAGS += -std=c++17
-include $(OBJS:.o=.d)

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
