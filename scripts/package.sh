#!/usr/bin/env bash
# Builds the Debian packages of snowflake the Debian way (debian/, pg_buildext:
# one postgresql-NN-snowflake per PostgreSQL major that debian/pgversions
# names and this machine has), from a clean clone of the committed tree, and
# leaves them in dist/ with lintian's verdict. On a bare Debian machine it
# first installs what that needs (scripts/install-deps.sh picks the major of
# the release; PG_MAJOR=NN chooses another). The build runs pg_regress on each
# major in a throw-away cluster that preloads the library.
#
#   scripts/package.sh
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

scripts/install-deps.sh --packaging

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
