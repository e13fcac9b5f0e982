#!/usr/bin/env bash
# Builds the Debian package of snowflake the Debian way (debian/, pg_buildext)
# from a clean clone of the committed tree, and leaves it in dist/ with
# lintian's verdict: postgresql-NN-snowflake for the major scripts/postgresql.sh
# picks (the release's, or PG_MAJOR=NN; debian/pgversions must name it). On a
# bare Debian machine it first installs what that needs. The build runs
# pg_regress in a throw-away cluster that preloads the library.
#
#   scripts/package.sh
#   PG_MAJOR=19 scripts/package.sh    postgresql-19-snowflake (forky, sid)
#
# Another machine then installs a package with its dependencies:
#   apt-get install ./dist/postgresql-15-snowflake_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/package.sh runs as root: it installs the packages a build needs." >&2
    exit 1
fi

# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh  # PG_MAJOR
# Warnings are errors in the package's build (the Makefile's WERROR, which
# reaches make through dpkg-buildpackage and pg_buildext), as in the tests'.
export WERROR=${WERROR:-1}
scripts/install-deps.sh --packaging
# pg_buildext builds for the majors of debian/pgversions that this variable
# names (without it, for the release's default major only): here, the one
# chosen above, whose server and headers install-deps.sh installed.
export PG_SUPPORTED_VERSIONS=${PG_SUPPORTED_VERSIONS:-$PG_MAJOR}

work=$(mktemp -d /tmp/snowflake-package.XXXXXX)
chmod 755 "$work"  # the test cluster runs as postgres and reads the package tree
trap 'rm -rf "$work"' EXIT
git clone -q "$REPO" "$work/snowflake"
git -C "$work/snowflake" checkout -q "$(git -C "$REPO" rev-parse HEAD)"
[ -z "$(git status --porcelain --untracked-files=no)" ] \
    || echo "note: uncommitted changes are not in the package"

cd "$work/snowflake"
pg_buildext updatecontrol
echo "=== dpkg-buildpackage (PostgreSQL $(pg_buildext supported-versions | xargs)) ==="
dpkg-buildpackage -b -us -uc

mkdir -p "$REPO/dist"
cp ../*.deb "$REPO/dist/"
echo "=== lintian ==="
# Errors fail the build; warnings are shown.
lintian --fail-on error ../*.changes
echo "=== packages in dist/ ==="
for deb in ../*.deb; do
    echo "$(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done
