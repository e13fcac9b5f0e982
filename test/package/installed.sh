#!/usr/bin/env bash
# An install as a user does it, checked on a machine that has never built
# snowflake (a fresh root from scripts/fresh-root.sh), as root:
#
#   test/package/installed.sh deb [DIR]    apt-get install DIR/postgresql-NN-snowflake_*.deb
#                                          (default dist/), which brings its dependencies
#   test/package/installed.sh pgxn ZIP     pgxn install ZIP (the `make dist` zip), on a
#                                          machine with the server headers, g++ and make
#
# Then it creates a cluster the Debian way (pg_createcluster) that preloads the
# library, starts it with pg_ctlcluster, issues and decodes IDs, and runs the
# pg_regress suite (sql/, expected/) against it with the pg_regress that
# postgresql-client-NN ships. It removes the cluster at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
how=${1:-}

install_deb() {
    local dist=${1:-dist} debs deb
    debs=("$dist"/postgresql-*-snowflake_*.deb)
    [ -f "${debs[0]}" ] || { echo "no postgresql-NN-snowflake_*.deb in $dist" >&2; exit 1; }
    [ ${#debs[@]} -eq 1 ] || { echo "more than one package in $dist: ${debs[*]}" >&2; exit 1; }
    deb=$(realpath "${debs[0]}")
    major=$(basename "$deb" | sed -n 's/^postgresql-\([0-9]*\)-snowflake_.*/\1/p')
    # The package's major from apt's sources: for 19, Debian's experimental
    # archive, added as a user adds it (README, "Supported PostgreSQL").
    PG_MAJOR=$major PG_CONFIG='' scripts/install-deps.sh --sources
    echo "=== apt-get install $(basename "$deb") ==="
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
    dpkg-query -W -f='${Package} ${Version} ${Status}\n' "postgresql-$major-snowflake"
    # The pg_upgradecluster hook for upgrades into this major (README,
    # "Upgrading PostgreSQL"), a conffile that pg_upgradecluster's run-parts runs.
    local hook=/etc/postgresql-common/pg_upgradecluster.d/snowflake-$major
    [ -x "$hook" ] || { echo "the package installed no executable $hook" >&2; exit 1; }
    run-parts --test --lsbsysinit "$(dirname "$hook")" | grep -qx "$hook" \
        || { echo "run-parts --lsbsysinit would not run $hook" >&2; exit 1; }
    dpkg-query -W -f='${Conffiles}\n' "postgresql-$major-snowflake" | grep -q " $hook " \
        || { echo "$hook is not a conffile of the package" >&2; exit 1; }
    echo "pg_upgradecluster hook: $hook (a conffile)"
    # The monitoring configuration (doc/monitoring.md), as examples.
    local examples=/usr/share/doc/postgresql-$major-snowflake/examples
    for file in queries.yaml alerts.yaml; do
        cmp "$examples/$file" "contrib/monitoring/$file" \
            || { echo "the package installed no $examples/$file, or another one" >&2; exit 1; }
    done
    echo "monitoring examples: $examples/queries.yaml, alerts.yaml"
}

install_pgxn() {
    local zip=${1:?the zip that make dist wrote}
    # The release's PostgreSQL (scripts/postgresql.sh), its headers and a
    # compiler: what "a machine with the server headers" has.
    # shellcheck source=scripts/postgresql.sh
    source scripts/postgresql.sh
    major=$PG_MAJOR
    # A machine without the package: remove one an earlier check installed.
    if dpkg-query -W -f='${Status}' "postgresql-$major-snowflake" 2>/dev/null |
        grep -q "install ok installed"; then
        echo "=== apt-get remove postgresql-$major-snowflake ==="
        DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq "postgresql-$major-snowflake" >/dev/null
    fi
    scripts/install-deps.sh --sources
    echo "=== apt-get install pgxnclient postgresql-server-dev-$major g++ make ==="
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        pgxnclient "postgresql-$major" "postgresql-server-dev-$major" g++ make >/dev/null
    echo "=== pgxn install $(basename "$zip") ==="
    local work
    work=$(mktemp -d /tmp/snowflake-pgxn.XXXXXX)
    cp "$zip" "$work/"
    (cd "$work" && PATH="/usr/lib/postgresql/$major/bin:$PATH" pgxn install "./$(basename "$zip")")
    rm -rf "$work"
    ls -l "/usr/lib/postgresql/$major/lib/snowflake.so" "/usr/share/postgresql/$major/extension/snowflake.control"
}

case $how in
    deb) install_deb "${2:-dist}" ;;
    pgxn) install_pgxn "${2:-}" ;;
    *) echo "usage: test/package/installed.sh deb [DIR] | pgxn ZIP" >&2; exit 2 ;;
esac

# CREATE EXTENSION runs one script, the default version's whole one, beside
# the update scripts from every earlier version (CONTRIBUTING, "A new version
# of the extension").
default=$(sed -n "s/^default_version = '\(.*\)'/\1/p" snowflake.control)
extension_dir=/usr/share/postgresql/$major/extension
for script in "snowflake--$default.sql" snowflake--1.0.sql; do
    [ -f "$extension_dir/$script" ] || { echo "the install put no $script in $extension_dir" >&2; exit 1; }
done
updates=$(find "$extension_dir" -name 'snowflake--*--*.sql' | wc -l)
[ "$updates" -eq "$(find sql -name 'snowflake--*--*.sql' | wc -l)" ] \
    || { echo "the install put $updates update scripts in $extension_dir, not those of sql/" >&2; exit 1; }
echo "scripts: snowflake--$default.sql whole, snowflake--1.0.sql and $updates update scripts in $extension_dir"

cluster=snowflake_check
port=5499
cleanup() { pg_dropcluster --stop "$major" "$cluster" 2>/dev/null || true; }
trap cleanup EXIT
echo "=== pg_createcluster $major $cluster, preloading snowflake ==="
pg_createcluster "$major" "$cluster" --port "$port" \
    -o "shared_preload_libraries=snowflake" \
    -o "snowflake.datacenter_id=3" -o "snowflake.worker_id=7" \
    -o "listen_addresses=" >/dev/null
pg_ctlcluster "$major" "$cluster" start

psql_check() { (cd /tmp && runuser -u postgres -- psql -X -v ON_ERROR_STOP=1 -p "$port" "$@"); }
echo "=== IDs issued and decoded ==="
psql_check -c "CREATE EXTENSION snowflake" \
    -c "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text)" \
    -c "INSERT INTO orders (item) VALUES ('tea'), ('cake')" \
    -c "SELECT o.id, d.* FROM orders o, snowflake_decode(o.id) d ORDER BY o.id" \
    -c "DROP TABLE orders" -c "DROP EXTENSION snowflake"
echo "=== pg_regress against the packaged install ==="
# The postgres user runs pg_regress, on a copy of the tests it can read.
work=$(mktemp -d /tmp/snowflake-regress.XXXXXX)
cp -r sql expected "$work/"
chown -R postgres: "$work"
# UTF-8, whatever the locale of the machine: a test decodes non-ASCII text.
runuser -u postgres -- createdb -p "$port" -E UTF8 --locale=C -T template0 snowflake_packaged
# What --load-extension does in a database pg_regress makes itself (not in
# one it is given with --use-existing): every file expects the extension.
psql_check -d snowflake_packaged -c "CREATE EXTENSION snowflake"
tests=$(cd sql && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | grep -v '^snowflake--' | xargs)
# shellcheck disable=SC2086
if ! (cd "$work" && runuser -u postgres -- \
    "/usr/lib/postgresql/$major/lib/pgxs/src/test/regress/pg_regress" \
    --bindir="/usr/lib/postgresql/$major/bin" --inputdir="$work" --outputdir="$work" \
    --host=/var/run/postgresql --port="$port" --use-existing --dbname=snowflake_packaged \
    $tests); then
    cat "$work/regression.diffs" 2>/dev/null || true
    exit 1
fi
rm -rf "$work"
echo "=== the packaged install passes ==="
