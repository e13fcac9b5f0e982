#!/usr/bin/env bash
# The clients layer (scripts/test.sh clients): the drivers and ORMs that
# applications use, each running the recipes of doc/clients.md against a real
# server that preloads snowflake, and each asserting that the IDs came back
# exact, singly and in bulk, that a foreign key holds them, and that they
# decode; and the traps of the guide, each shown to lose or refuse what the
# recipe keeps. Run by scripts/test.sh, which has installed the extension and
# the Debian packages (scripts/install-deps.sh --clients).
#
#   test/clients/run.sh                 every client
#   test/clients/run.sh psycopg knex    some (the names are in CLIENTS below)
#
# It installs the npm packages of test/clients/node/package-lock.json into
# test/clients/node/node_modules (npm ci, without install scripts, only when
# the lock file changed),
# then runs in a network namespace of its own: the server listens on its
# loopback (pgjdbc speaks TCP only), where no other server on this machine can
# be, and the namespace goes away with the layer. Each client gets a database
# of its own. Prints "clients: N passed, N failed" and fails if any failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CLIENTS=(snippets psycopg psycopg2 sqlalchemy django pgjdbc hibernate activerecord
    node-postgres knex sequelize typeorm drizzle postgres-js kysely mikro-orm prisma pgx pdo laravel doctrine
    dbd-pg libpqxx tokio-postgres sqlx diesel json)

# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh
# Debian's interpreters first: the libraries are Debian's, installed for them.
export PATH="$PG_BIN:/usr/bin:/bin:$PATH"

if [ -z "${SNOWFLAKE_CLIENTS_NETNS:-}" ]; then
    lock=test/clients/node/package-lock.json
    stamp=test/clients/node/node_modules/.snowflake-lock.sha256
    if ! sha256sum --status -c "$stamp" 2>/dev/null; then
        echo "npm ci (test/clients/node, from $lock)"
        started=$SECONDS
        # No install scripts: Prisma's are a check that fails the install on
        # a Node.js it does not support (bookworm's 18), and a download of
        # its schema engine, which this machine cannot reach.
        (cd test/clients/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        echo "npm ci: $((SECONDS - started)) s"
        sha256sum "$lock" >"$stamp"
    fi
    exec unshare --net -- env SNOWFLAKE_CLIENTS_NETNS=1 "$0" "$@"
fi

ip link set lo up
# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
pgx_build_pid=
trap 'clusters_cleanup; [ -z "$pgx_build_pid" ] || kill "$pgx_build_pid" 2>/dev/null || true' EXIT
cluster_start clients 5432 "listen_addresses = '127.0.0.1'" \
    "shared_preload_libraries = 'snowflake'" \
    "snowflake.datacenter_id = 3" "snowflake.worker_id = 7"
# A second server, in the javascript layout (test/clients/javascript.conf),
# for the JSON test: its IDs arrive in JavaScript exact as numbers.
mapfile -t javascript_layout < <(grep -v '^#' test/clients/javascript.conf)
cluster_start javascript 5433 "listen_addresses = '127.0.0.1'" "${javascript_layout[@]}"
cluster_psql javascript -q -c "CREATE EXTENSION snowflake"
export SNOWFLAKE_JAVASCRIPT_PGPORT=5433
# Every client reads these (libpq's variables; the JVM gets a JDBC URL).
export PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres
export SNOWFLAKE_DATACENTER_ID=3 SNOWFLAKE_WORKER_ID=7

# The Go packages Debian installs, in GOPATH mode (no module proxy here).
export GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE=$ROOT/build/clients/go-cache
export SNOWFLAKE_CHECKOUT=$ROOT

JARS=/usr/share/java
HIBERNATE_CLASSPATH=$(printf "$JARS/%s.jar:" hibernate-core geronimo-jpa_2.0_spec geronimo-jta-1.2-spec \
    hibernate-commons-annotations antlr commons-collections3 dom4j slf4j-api slf4j-nop javassist postgresql)

# Compiles test/clients/java/CLASS.java and runs it.
java_run() {
    local classpath=$1 class=$2
    mkdir -p build/clients/java
    javac -d build/clients/java -cp "$classpath" "test/clients/java/$class.java" \
        && timeout --kill-after=10 300 java -cp "build/clients/java:$classpath" "$class"
}

# The pgx test, built while the other clients run (a cold Go build of pgx and
# the standard library is the layer's longest step): with pgx v4 or, where
# Debian packages pgx v5, from a copy whose import (and pgxMajor) says v5, as
# the recipe's calls are the same in both.
pgx_build() {
    local package=./test/clients/go
    if [ -d "$GOPATH/src/github.com/jackc/pgx/v5" ]; then
        package=./build/clients/pgx-v5
        rm -rf "$package"
        mkdir -p "$package"
        sed 's|"github.com/jackc/pgx/v4"|"github.com/jackc/pgx/v5"|; s|^const pgxMajor = 4$|const pgxMajor = 5|' \
            test/clients/go/pgx_test.go >"$package/pgx_test.go"
    fi
    echo "go test -c $package"
    go test -c -vet=off -o build/clients/pgx.test "$package"
}
pgx_run() {
    # Its status, once written (a client runs in a subshell: it cannot wait for it).
    while [ ! -s build/clients/pgx-build.status ]; do sleep 1; done
    cat build/clients/pgx-build.log
    [ "$(cat build/clients/pgx-build.status)" = 0 ] || return 1
    build/clients/pgx.test -test.count=1 -test.v -test.timeout=5m
}

# The libpqxx test: compiled (C++20, as libpqxx 8 needs) and run.
libpqxx_run() {
    g++ -std=c++20 -o "build/clients/libpqxx_test-$PG_MAJOR" test/clients/cpp/libpqxx_test.cpp -lpqxx -lpq &&
        timeout --kill-after=10 300 "build/clients/libpqxx_test-$PG_MAJOR"
}

# A Rust client (test/clients/rust/CRATE): built offline from Debian's crate
# registry (test/clients/rust/.cargo/config.toml, which cargo reads from the
# directory it runs in), debug profile without debug information (nothing
# here reads it; tokio-postgres's build, alone on a 2-core machine: 60 s
# instead of 70), into build/clients/rust, then run.
# Where the release packages no such crate (sqlx and Diesel before trixie),
# the test is skipped, saying so. The lock file is resolved anew each time
# against this release's registry.
# Diesel is skipped too where Debian's diesel_derives and dsl_auto_type use
# different majors of syn: rustc refuses to build the mix (forky's 2.3.10,
# syn 3, and 0.2.0, syn 2: "multiple different versions of crate `syn`").
export CARGO_TARGET_DIR=$ROOT/build/clients/rust CARGO_PROFILE_DEV_DEBUG=false
syn_majors() {
    local crate
    for crate in "$@"; do
        sed -n '/^\[dependencies.syn\]/{n;s/^version = "\([0-9]*\).*/\1/p}' /usr/share/cargo/registry/"$crate"-[0-9]*/Cargo.toml
    done | sort -u | paste -sd ' '
}
rust_run() {
    local crate=$1 release started majors
    release=$(. /etc/os-release && echo "Debian ${VERSION_CODENAME:-$VERSION_ID}")
    if ! compgen -G "/usr/share/cargo/registry/$crate-[0-9]*" >/dev/null; then
        echo "ok - $crate # SKIP $release packages no $crate crate"
        return 0
    fi
    majors=$([ "$crate" != diesel ] || syn_majors diesel_derives dsl_auto_type)
    if [[ "$majors" == *" "* ]]; then
        echo "ok - $crate # SKIP $release's diesel_derives and dsl_auto_type use syn $majors: they do not build together"
        return 0
    fi
    started=$SECONDS
    (cd "test/clients/rust/$crate" && rm -f Cargo.lock && cargo build --offline --quiet) || return 1
    echo "cargo build: $((SECONDS - started)) s"
    timeout --kill-after=10 300 "build/clients/rust/debug/snowflake-$crate"
}

# A Node test (node's test runner, one process), or where this Node.js is
# older than its npm packages' engines field allows (bookworm's nodejs is 18),
# its skip, with the reason (test/clients/node/engines.js).
node_test() {
    local file=$1 too_old
    shift
    if too_old=$(node test/clients/node/engines.js "$@"); then
        timeout --kill-after=10 300 node --test "$file"
    else
        echo "ok 1 - $file # SKIP $too_old"
    fi
}

# The Prisma test: its client generated from test/clients/node/prisma/
# schema.prisma (prisma generate runs offline, but first checks for Prisma's
# schema engine, a binary it would download and that generate does not run:
# any file named by PRISMA_SCHEMA_ENGINE_BINARY passes that check), then run.
prisma_run() {
    local too_old
    if too_old=$(node test/clients/node/engines.js prisma @prisma/client @prisma/adapter-pg); then
        (cd test/clients/node && CHECKPOINT_DISABLE=1 PRISMA_SCHEMA_ENGINE_BINARY=/bin/false \
            timeout --kill-after=10 120 node_modules/.bin/prisma generate) &&
            timeout --kill-after=10 300 node --test test/clients/node/prisma.test.mjs
    else
        echo "ok 1 - prisma # SKIP $too_old"
    fi
}

# An empty database with the extension.
fresh_database() {
    cluster_psql clients -q -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1"
    cluster_psql clients -q -d "$1" -c "CREATE EXTENSION snowflake"
}

# The command that runs one client's tests, from the checkout. A client that
# hangs (Django's test runner waits for DROP DATABASE, for one) fails after
# five minutes.
client_command() {
    local limit="timeout --kill-after=10 300"
    case $1 in
        snippets) echo "python3 test/clients/snippets.py --check" ;;
        psycopg | psycopg2 | sqlalchemy) echo "$limit python3 test/clients/python/test_$1.py -v" ;;
        django) echo "$limit test/clients/django/run.sh" ;;
        pgjdbc) echo "java_run $JARS/postgresql.jar Pgjdbc" ;;
        hibernate) echo "java_run $HIBERNATE_CLASSPATH HibernateClient" ;;
        activerecord) echo "$limit ruby test/clients/ruby/activerecord_test.rb" ;;
        pgx) echo "pgx_run" ;;
        pdo | laravel | doctrine) echo "$limit php test/clients/php/$1_test.php" ;;
        dbd-pg) echo "$limit perl test/clients/perl/dbd_pg.t" ;;
        libpqxx) echo "libpqxx_run" ;;
        tokio-postgres | sqlx | diesel) echo "rust_run $1" ;;
        node-postgres | knex | sequelize | typeorm | drizzle | json) echo "$limit node --test test/clients/node/$1.test.js" ;;
        postgres-js) echo "node_test test/clients/node/$1.test.mjs postgres" ;;
        kysely) echo "node_test test/clients/node/$1.test.mjs kysely" ;;
        mikro-orm) echo "node_test test/clients/node/$1.test.mjs @mikro-orm/core @mikro-orm/postgresql" ;;
        prisma) echo "prisma_run" ;;
        *) return 1 ;;
    esac
}

selected=("$@")
[ ${#selected[@]} -gt 0 ] || selected=("${CLIENTS[@]}")
for client in "${selected[@]}"; do
    client_command "$client" >/dev/null || { echo "unknown client: $client (one of: ${CLIENTS[*]})" >&2; exit 2; }
done

mkdir -p build/clients
if [[ " ${selected[*]} " == *" pgx "* ]]; then
    rm -f build/clients/pgx-build.status
    { pgx_build >build/clients/pgx-build.log 2>&1; echo $? >build/clients/pgx-build.status; } &
    pgx_build_pid=$!
fi

# The JSON each language writes, for the json test; only this run's.
rm -rf build/clients/json
export SNOWFLAKE_CLIENTS_RAN="${selected[*]}"
# The reasons of the tests a client's output says it skipped (node's test
# runner: "# SKIP why" in TAP, "﹣ name (ms) # why" in its spec reporter).
skip_reasons() {
    sed -n 's/.* # SKIP \(.*\)$/\1/p; s/^﹣ .* # \(.*\)$/\1/p' "$1" | sort -u | paste -sd ';' | sed 's/;/; /g'
}

passed=0 failed=0 results=()
for client in "${selected[@]}"; do
    printf '\n--- %s ---\n' "$client"
    database=clients_${client//-/_}
    fresh_database "$database"
    started=$SECONDS
    output=build/clients/$client.log
    # shellcheck disable=SC2046,SC2091  # the command is client_command's words
    if PGDATABASE=$database DATABASE_URL="postgresql://postgres@127.0.0.1:5432/$database" \
        JDBC_URL="jdbc:postgresql://127.0.0.1:5432/$database?user=postgres" \
        $(client_command "$client") 2>&1 | tee "$output"; then
        outcome=passed
        passed=$((passed + 1))
    else
        outcome=FAILED
        failed=$((failed + 1))
        cluster_log_tail clients
    fi
    result=$(printf '%-14s %s  %4d s' "$client" "$outcome" $((SECONDS - started)))
    skipped=$(skip_reasons "$output")
    [ -z "$skipped" ] || result+="  (skipped: $skipped)"
    results+=("$result")
done

# What this run tested (doc/clients.md, "Versions tested"): Debian's
# packages, and npm's from the lock file.
printf '\n=== versions ===\n'
{ dpkg-query -W -f='${db:Status-Abbrev}${Package} ${Version}\n' python3 python3-psycopg python3-psycopg2 \
    python3-sqlalchemy python3-django default-jdk-headless libpostgresql-jdbc-java libhibernate3-java ruby \
    ruby-activerecord ruby-pg golang-go 'golang-github-jackc-pgx-v*-dev' nodejs php-cli php-illuminate-database \
    php-doctrine-dbal php-doctrine-orm libdbd-pg-perl libpqxx-dev rustc librust-tokio-postgres-dev librust-sqlx-dev \
    librust-diesel-dev librust-serde-json-dev 2>/dev/null || true; } |
    sed -n 's/^ii *//p' | paste -sd ',' | sed 's/,/, /g'
for package in pg knex sequelize typeorm drizzle-orm postgres kysely @mikro-orm/core prisma @prisma/client @prisma/adapter-pg; do
    printf '%s %s\n' "$package" "$(node -p "require('./test/clients/node/node_modules/$package/package.json').version")"
done | paste -sd ',' | sed 's/,/, /g'

printf '\n=== clients (PostgreSQL %s) ===\n' "$("$PG_CONFIG" --version | cut -d' ' -f2)"
printf '  %s\n' "${results[@]}"
echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
