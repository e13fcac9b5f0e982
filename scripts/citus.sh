#!/usr/bin/env bash
# Makes Citus available to the citus test layer (scripts/test.sh citus), for
# the PostgreSQL major that scripts/postgresql.sh selects. Citus is a test
# dependency only (AGPL-3.0): it is never linked into snowflake or shipped.
#
#   scripts/citus.sh     exit 0: Citus is installed (it was, or it is now)
#                        exit 3: Citus cannot be had here; the message says
#                                why (the layer then skips, saying so)
#                        other:  the build failed (its log's tail is shown)
#
# - Citus already installed for this major (its citus.control and citus.so
#   in this PostgreSQL's directories, from a package or by hand): used as is.
# - Otherwise it is built from the unmodified upstream tarball in
#   SNOWFLAKE_CITUS_SOURCE, by default ../shared/vendor/citus-14.0.1.tar.gz
#   beside the checkout (see that directory's README.md), and installed.
# - The build is kept in SNOWFLAKE_BUILD_CACHE (default
#   /var/cache/snowflake/build; scripts/fresh-root.sh lends the host's to its
#   roots), keyed by the tarball's sha256, the PostgreSQL version
#   (major.minor) and the build recipe: a warm run copies the installed
#   files from there, a cold one builds (about 2 minutes on 2 cores) and
#   fills it. One build at a time per cache (flock).
# - Built as upstream says (`./configure && make && make install`), with
#   `with_llvm=no` (no JIT bitcode: half the compile time, and nothing here
#   needs it); the packages it needs are install-deps.sh's citus_build list.
#   A source build never sends Citus's usage reports (packagers turn them on),
#   and the tests set citus.enable_statistics_collection = off besides.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh

unavailable() {
    echo "citus: $*" >&2
    exit 3
}

pkglibdir=$("$PG_CONFIG" --pkglibdir)
sharedir=$("$PG_CONFIG" --sharedir)
installed_version() {
    [ -f "$pkglibdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ] || return 1
    sed -n "s/^default_version = '\(.*\)'/\1/p" "$sharedir/extension/citus.control"
}

if version=$(installed_version); then
    echo "citus: Citus $version is installed for PostgreSQL $PG_MAJOR"
    exit 0
fi

# Citus 14, the vendored version, builds against 16, 17 and 18 only: its
# configure refuses any other major.
if [ "$PG_MAJOR" -lt 16 ] || [ "$PG_MAJOR" -gt 18 ]; then
    unavailable "Citus 14 (the vendored version) supports PostgreSQL 16, 17 and 18; this is PostgreSQL $PG_MAJOR." \
        "Run the layer in a fresh root of a release that has one: scripts/fresh-root.sh trixie -- 'scripts/test.sh citus'"
fi
source_tarball=${SNOWFLAKE_CITUS_SOURCE:-$(dirname "$PWD")/shared/vendor/citus-14.0.1.tar.gz}
if [ ! -r "$source_tarball" ]; then
    unavailable "Citus is not installed for PostgreSQL $PG_MAJOR, and there is no Citus source at $source_tarball" \
        "(set SNOWFLAKE_CITUS_SOURCE to a Citus release tarball)."
fi

# Builds the source tree in the current directory into DESTDIR $1; its
# output goes to the caller.
build_citus() {
    ./configure PG_CONFIG="$PG_CONFIG" &&
        make -j "$(nproc)" with_llvm=no &&
        make install-extension with_llvm=no DESTDIR="$1"
}

# The cache key: the tarball, the PostgreSQL it builds against, and the
# recipe above (a changed recipe builds anew).
postgresql_version=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9.]*\).*/\1/p')
sha=$(sha256sum "$source_tarball" | cut -c1-16)
recipe=$(declare -f build_citus | sha256sum | cut -c1-8)
cache_root=${SNOWFLAKE_BUILD_CACHE:-/var/cache/snowflake/build}
cached=$cache_root/citus-$sha-pg$postgresql_version-$recipe  # holds install/, the files `make install` wrote
mkdir -p "$cache_root"

exec 8>"$cache_root/citus.lock"
flock 8
if [ -d "$cached/install" ]; then
    echo "citus: the build of $(basename "$source_tarball") for PostgreSQL $postgresql_version from the cache ($cached)"
else
    work=$(mktemp -d /var/tmp/snowflake-citus-build.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    echo "citus: building $(basename "$source_tarball") for PostgreSQL $postgresql_version" \
        "(not in the cache: $cached; a few minutes)"
    started=$SECONDS
    tar -xzf "$source_tarball" -C "$work"
    if ! (cd "$(find "$work" -mindepth 1 -maxdepth 1 -type d)" && build_citus "$work/install") >"$work/build.log" 2>&1; then
        echo "citus: the build failed; the last lines of its log:" >&2
        tail -n 40 "$work/build.log" >&2
        exit 1
    fi
    # Replaces earlier builds for this major (other minor releases, recipes).
    rm -rf "$cache_root"/citus-*-pg"$PG_MAJOR".* "$cached.tmp"
    mkdir -p "$cached.tmp"
    mv "$work/install" "$work/build.log" "$cached.tmp/"
    mv "$cached.tmp" "$cached"
    echo "citus: built in $((SECONDS - started)) s"
fi
cp -a "$cached/install/." /
flock -u 8

if ! version=$(installed_version); then
    echo "citus: the build in $cached did not install citus.so for PostgreSQL $PG_MAJOR" >&2
    exit 1
fi
echo "citus: Citus $version installed for PostgreSQL $PG_MAJOR"
