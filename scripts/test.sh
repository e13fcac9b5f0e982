#!/usr/bin/env bash
# Runs the tests of snowflake, as root, on a fresh Debian machine or this one:
# installs what the layers it runs need (scripts/install-deps.sh --layers),
# builds and installs the extension, runs each layer, and fails if any test
# fails. The layers, in the order they run (ALL_LAYERS below), and what each
# proves: the table of CONTRIBUTING.md, "Tests", one row a layer, by these
# names (test/docs.pl checks that they agree). One test in seconds, without
# root and without this script: the first lines of CONTRIBUTING.md.
#
#   scripts/test.sh                      every layer
#   scripts/test.sh unit sql tap         some layers (run in ALL_LAYERS' order)
#   scripts/test.sh --except clients     every layer but the one named (repeat
#                                        --except for more); CI runs the model
#                                        and clients layers in a root of their
#                                        own (.ci/run)
#   scripts/test.sh tap test/t/020_restart_crash.pl
#                                        some cluster tests only
#   scripts/test.sh citus test/citus/030_identities_configured.pl
#                                        some Citus tests only
#   scripts/test.sh ha test/ha/201_partition_cut.t
#                                        some drills only
#   scripts/test.sh clients knex         some clients only (test/clients/run.sh)
#
# The environment: PG_CONFIG or PG_MAJOR, which PostgreSQL (scripts/postgresql.sh);
# WERROR (default 1); the campaign's CAMPAIGN_SEEDS (default "10 125"),
# CAMPAIGN_OPERATIONS (default 10) and CAMPAIGN_SHRINK_BUDGET_S (default 600:
# longer runs, replays, shrinking and mutants are test/campaign/run.sh's); the
# mutants layer's MUTANTS_SAMPLE (all: every mutant) and MUTANTS_SEED.
set -Eeuo pipefail
# A command that ends the script (set -e) says which, even one whose own
# output said nothing; said by the script's own shell only, as a subshell's
# (a process substitution's) failure is the script's only if its command
# fails.
trap 'err_status=$?; [ "$BASHPID" != "$$" ] || echo "scripts/test.sh: line $LINENO: $BASH_COMMAND failed (status $err_status)" >&2' ERR
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh runs as root: it installs packages and runs servers as the postgres user." >&2
    exit 1
fi

# Every layer runs in this order, however they were named: upgrade last, as
# it adds another Debian release's archive to apt's sources.
ALL_LAYERS=(unit model simulation fuzz sql sqlsmith sanitize tap mutants campaign ha regress citus clients monitoring upgrade)
is_layer() { [[ " ${ALL_LAYERS[*]} " == *" $1 "* ]]; }

layers=()
tap_tests=()
citus_tests=()
ha_tests=()
clients=()
excepted=()
while [ $# -gt 0 ]; do
    argument=$1
    shift
    case $argument in
        --except)
            if [ $# -eq 0 ] || ! is_layer "$1"; then
                echo "--except needs a layer (${ALL_LAYERS[*]}), not '${1:-}'" >&2
                exit 2
            fi
            excepted+=("$1")
            shift
            ;;
        -*)
            echo "unknown option: $argument" >&2
            exit 2
            ;;
        test/citus/*.pl) citus_tests+=("$argument") ;;
        *.pl) tap_tests+=("$argument") ;;
        *.t) ha_tests+=("$ROOT/$argument") ;;
        *)
            # After "clients", the names of clients (test/clients/run.sh checks them).
            if is_layer "$argument"; then
                layers+=("$argument")
            elif [[ " ${layers[*]} " == *" clients "* ]]; then
                clients+=("$argument")
            else
                echo "unknown layer or test: $argument" >&2
                exit 2
            fi
            ;;
    esac
done
[ ${#layers[@]} -gt 0 ] || layers=("${ALL_LAYERS[@]}")
if [ ${#excepted[@]} -gt 0 ]; then
    kept=()
    for layer in "${layers[@]}"; do
        [[ " ${excepted[*]} " == *" $layer "* ]] || kept+=("$layer")
    done
    if [ ${#kept[@]} -eq 0 ]; then
        echo "no layer left to run after --except ${excepted[*]}" >&2
        exit 2
    fi
    layers=("${kept[@]}")
    echo "layers: ${layers[*]} (--except ${excepted[*]})"
fi
skipped=()  # layers that could not run here, with why

# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh  # PG_MAJOR, PG_CONFIG (make reads it), PG_BIN
# Warnings are errors in every build of the tests (the Makefile's WERROR,
# which make reads from the environment, and so do the layers' own builds:
# sanitize, upgrade, mutants, campaign); a user's `make` leaves them warnings.
export WERROR=${WERROR:-1}
# What these layers need, and nothing more (the upgrade layer installs the
# previous major itself).
scripts/install-deps.sh --layers "${layers[@]}"
export PATH="$PG_BIN:$PATH"

section() { printf '\n=== %s ===\n' "$*"; }

run_unit() {
    section "packaging, documents and formatting"
    prove test/package.pl test/install_deps.pl test/docs.pl
    make -s format-check
    # FF1's radix-2 vectors (the unit tests include them) are what the
    # independent transcription writes, after it has matched NIST's samples.
    python3 test/unit/ff1_reference.py | diff -u test/unit/ff1_reference_vectors.inc -

    local variant flags
    for variant in plain sanitized; do
        section "unit tests (GoogleTest, $variant)"
        flags=()
        [ "$variant" = sanitized ] && flags=(-DSNOWFLAKE_SANITIZE=ON)
        cmake -S test/unit -B "build/unit-$variant" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
        cmake --build "build/unit-$variant" -j "$(nproc)" >/dev/null
        ctest --test-dir "build/unit-$variant" --output-on-failure --timeout 300
    done
}

# With the clang PGXS uses (install-deps.sh installs its libFuzzer and
# sanitizer runtimes, libclang-rt-NN-dev).
run_fuzz() {
    section "fuzzing (test/fuzz: libFuzzer under ASan and UBSan; the layout arithmetic against Python)"
    local clang
    clang=$(sed -n 's/^CLANG *= *//p' "$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global")
    CLANG=${clang/clang/clang++} test/fuzz/run.sh
}

build_extension() {
    section "build and install the extension"
    make -s -j "$(nproc)"
    make -s install >/dev/null
}

run_sql() {
    # shellcheck source=scripts/cluster.sh
    source scripts/cluster.sh
    trap clusters_cleanup EXIT
    local preload="shared_preload_libraries = 'snowflake'" status=0

    section "pg_regress (sql/, expected/)"
    # The keys of public IDs for the pgTAP suite (sql/public_id.sql sets its own).
    local keys=$SCRATCH/public_id.keys
    install -o postgres -g postgres -m 600 test/pgtap/public_id.keys "$keys"
    # The settings of pg_regress's temporary instance (CONTRIBUTING.md's one
    # test), and the keys.
    local settings
    mapfile -t settings < <(grep -v -e '^#' -e '^$' test/pg_regress.conf)
    cluster_start configured 54400 "${settings[@]}" "snowflake.public_id_keys_file = '$keys'"
    mkdir -p build/regress
    if ! env $(cluster_env configured) make -s installcheck REGRESS_OUTPUTDIR=build/regress; then
        cat build/regress/regression.diffs 2>/dev/null || true
        cluster_log_tail configured
        status=1
    fi

    section "pgTAP"
    cluster_start unset 54401 "$preload"
    cluster_start plain 54402
    local name
    for name in configured unset plain; do
        cluster_psql "$name" -q -c "CREATE DATABASE snowflake_tap"
        echo "--- cluster '$name' ---"
        env $(cluster_env "$name") PGDATABASE=snowflake_tap pg_prove --failures test/pgtap/"$name"/*.sql \
            || { cluster_log_tail "$name"; status=1; }
    done
    # Done with them: the cluster tests start their own.
    for name in configured unset plain; do cluster_stop "$name"; done
    return $status
}

# Runs Perl TAP tests (paths relative to the checkout) with prove as the
# postgres user: the framework runs initdb and the servers as the user running
# prove, PROVE_JOBS tests at a time (default 1). They run from a copy laid
# out as the checkout, that user's to read:
# test/perl, doc/registry.md (the tests create the registry table from it)
# and README.md (test/t/086 checks the state file's size it gives) included.
prove_as_postgres() {
    local work
    work=$(mktemp -d /tmp/snowflake-tap.XXXXXX)
    mkdir -p "$work/test" "$work/doc"
    cp -r test/t test/citus test/perl test/campaign "$work/test/"
    cp doc/registry.md "$work/doc/"
    cp README.md "$work/"
    chown -R postgres: "$work"
    local tests=("${@/#/$work/}")
    local status=0
    local pgxs
    pgxs=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")
    # Where the framework keeps data and logs: TESTDIR/tmp_check up to 16,
    # TESTDATADIR and TESTLOGDIR from 17. The same place on every major.
    # From $work: a clone in /root is not the postgres user's to enter, and
    # psql's complaint about that on stderr fails poll_query_until on 15.
    # PROVE_ENV: NAME=VALUE words for the tests' environment (the sanitize layer's).
    # shellcheck disable=SC2086  # words, split on purpose
    (cd "$work" && runuser -u postgres -- env PATH="$PATH" PG_REGRESS="$pgxs/test/regress/pg_regress" \
        TESTDIR="$work" TESTDATADIR="$work/tmp_check" TESTLOGDIR="$work/tmp_check/log" \
        SNOWFLAKE_EXTENSION_DIR="${SNOWFLAKE_EXTENSION_DIR:-}" \
        ${PROVE_ENV:-} prove -j "${PROVE_JOBS:-1}" -I "$pgxs/test/perl" -I "$work/test/perl" --timer "${tests[@]}") || status=$?
    if [ $status -ne 0 ]; then
        echo "--- logs kept in $work/tmp_check/log ---"
        tail -n 40 "$work"/tmp_check/log/regress_log_* 2>/dev/null | tail -n 200 || true
        return $status
    fi
    # PROVE_LOGS_TO: a folder to keep the servers' logs in (the sanitize layer reads them).
    [ -z "${PROVE_LOGS_TO:-}" ] || cp -r "$work/tmp_check/log" "$PROVE_LOGS_TO/$(basename "$work")"
    rm -rf "$work"
}

run_tap() {
    section "cluster tests (PostgreSQL::Test::Cluster)"
    # A test-only extension that requires snowflake (test/t/067: CASCADE).
    install -m 644 test/extension/snowflake_requirer* "$("$PG_CONFIG" --sharedir)/extension/"
    # test/t/073: snowflake installed into a directory of its own, as README
    # ("Into a directory of its own") says, for extension_control_path.
    local extension_dir
    extension_dir=$(mktemp -d /tmp/snowflake-extension.XXXXXX)
    make -s install datadir="$extension_dir/share" pkglibdir="$extension_dir/lib" >/dev/null
    chmod -R a+rX "$extension_dir"
    local tests=("${tap_tests[@]}")
    [ ${#tap_tests[@]} -gt 0 ] || tests=(test/t/*.pl)
    # One test per CPU at a time: each spends most of its time waiting (for
    # servers to start, leases to lapse, clocks to pass), and each keeps to
    # its own data directories, sockets and ports (PostgreSQL::Test::Cluster
    # hands out ports under a lock), as PostgreSQL's own TAP suites, which
    # meson runs side by side.
    SNOWFLAKE_EXTENSION_DIR=$extension_dir PROVE_JOBS=$(nproc) prove_as_postgres "${tests[@]}" || {
        rm -rf "$extension_dir"
        return 1
    }
    rm -rf "$extension_dir"
}

# The fault campaign (test/campaign/run.sh, doc/campaign.md), within CI's
# budget: a fixed list of seeds, a bounded number of operations each (about
# three minutes a seed on two cores). A failing seed is replayed and shrunk
# (a bounded time) to a schedule and a cluster test in build/campaign/found/.
run_campaign() {
    section "fault campaign (test/campaign: seeds ${CAMPAIGN_SEEDS:-10 125}, ${CAMPAIGN_OPERATIONS:-10} operations each)"
    local seeds=() seed
    for seed in ${CAMPAIGN_SEEDS:-10 125}; do seeds+=(--seed "$seed"); done
    test/campaign/run.sh "${seeds[@]}" --operations "${CAMPAIGN_OPERATIONS:-10}" \
        --shrink-budget-s "${CAMPAIGN_SHRINK_BUDGET_S:-600}"
}

# snowflake.so built with ASan and UBSan (-fsanitize=address,undefined, one
# build: a copy of the tree in build/sanitize, the normal build untouched) and
# installed, in servers started with ASan's runtime preloaded (LD_PRELOAD: an
# instrumented library needs it first in the process) that report to files
# (log_path), which the layer reads: first a server calls a fault built into
# that copy only (test/sanitize/sanitize_fault.cpp), and each fault must be
# reported; then the sql layer, then cluster tests (SANITIZE_TAP_TESTS). Any
# other report fails it; -fno-sanitize-recover ends the process at the first.
# Where the runtime cannot start PostgreSQL (bookworm: it deadlocks before
# main, doc/fuzzing.md) the build is UBSan's only, and the layer says so. The
# normal build is installed again at the end.
# The clock-step test runs alone, after the others: its 5 s step against 2 s
# waits leaves a margin of a second, which a second test beside it on a
# loaded machine has eaten.
SANITIZE_TAP_TESTS=(test/t/001_concurrency.pl test/t/020_restart_crash.pl test/t/050_registry_conflict.pl
    test/t/051_registry_automatic.pl test/t/071_layout_generate.pl)
run_sanitize() {
    local build=build/sanitize reports status=0 cxx runtime sanitizers=address,undefined
    cxx=$(sed -n 's/^CXX *= *//p' "$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global")
    # The ASan runtime of the compiler PGXS builds C++ with (g++: libasan).
    runtime=$(readlink -f "$("$cxx" -print-file-name=libasan.so)")
    if ! LD_PRELOAD=$runtime ASAN_OPTIONS=detect_leaks=0 timeout 20 "$PG_BIN/postgres" -V >/dev/null 2>&1; then
        echo "sanitize: PostgreSQL does not start with $runtime preloaded (bookworm: a deadlock before main, doc/fuzzing.md); UBSan only"
        skipped+=("ASan in the sanitize layer: PostgreSQL $PG_MAJOR does not start with $runtime preloaded here (UBSan ran)")
        runtime='' sanitizers=undefined
    fi
    section "build snowflake.so with -fsanitize=$sanitizers (build/sanitize)"
    rm -rf "$build"
    mkdir -p "$build"
    cp -r Makefile snowflake.control src sql "$build/"
    cp test/sanitize/sanitize_fault.cpp "$build/src/pg/"  # this build's only
    make -s -C "$build" clean
    # -fno-wrapv: overflow of signed integers is undefined in C++, as UBSan
    # judges it (PostgreSQL's -fwrapv defines it; with it, gcc 16 rejects a
    # constant expression of the core that overflows nothing).
    make -s -C "$build" -j "$(nproc)" with_llvm=no \
        PROFILE="-fsanitize=$sanitizers -fno-sanitize-recover=all -fno-omit-frame-pointer -fno-wrapv"
    make -s -C "$build" with_llvm=no install >/dev/null
    reports=$(mktemp -d /tmp/snowflake-sanitize.XXXXXX)
    chmod 1777 "$reports"
    local options
    options=$(sanitize_env "$reports" "$runtime")
    echo "sanitize: reports go to $reports"

    sanitize_faults "$reports/faults" "$runtime" || status=1
    # shellcheck disable=SC2034  # read by scripts/cluster.sh's cluster_start
    CLUSTER_SERVER_ENV=$options
    run_sql || status=1
    unset CLUSTER_SERVER_ENV
    ubsan_reports_in "$reports" "$SCRATCH"/*/server.log
    section "cluster tests under $sanitizers (a selection)"
    local logs
    logs=$(mktemp -d /tmp/snowflake-sanitize-logs.XXXXXX)
    chmod 755 "$logs"
    local tests=("${SANITIZE_TAP_TESTS[@]}") clock_steps=(test/t/010_clock_steps.pl)
    if [ -n "$runtime" ]; then
        # A process with both ASan's runtime and libfaketime preloaded hangs
        # before main: the tests that fake a server's clock cannot run here.
        tests=(test/t/001_concurrency.pl test/t/051_registry_automatic.pl) clock_steps=()
        skipped+=("under ASan, the cluster tests that fake a clock (010, 020, 050, 071): ASan's runtime and libfaketime preloaded together hang before main")
    fi
    PROVE_LOGS_TO=$logs PROVE_ENV=$options PROVE_JOBS=$(nproc) prove_as_postgres "${tests[@]}" || status=1
    [ ${#clock_steps[@]} -eq 0 ] || PROVE_LOGS_TO=$logs PROVE_ENV=$options prove_as_postgres "${clock_steps[@]}" || status=1
    ubsan_reports_in "$reports" "$logs"/*/*.log
    rm -rf "$logs"

    section "sanitizer reports"
    local files report
    files=$(find "$reports" -type f | sort)
    if [ -n "$files" ]; then
        echo "sanitize: $(echo "$files" | wc -l) report(s):"
        for report in $files; do echo "--- $report"; head -n 60 "$report"; done
        status=1
    else
        echo "sanitize: no report from any process (${sanitizers/,/ and })"
        rm -rf "$reports"
    fi
    section "install the normal build again"
    make -s install >/dev/null
    return $status
}

# The environment of a server of the sanitize build (NAME=VALUE words): its
# reports in folder $1, ASan's runtime $2 preloaded (none if ''). ASan leaves
# out leaks (PostgreSQL leaves memory to its memory contexts and to exit, by
# design) and keeps a smaller quarantine: every server process has its own.
sanitize_env() {
    echo -n "UBSAN_OPTIONS=log_path=$1/ubsan:print_stacktrace=1"
    [ -z "$2" ] || echo -n " LD_PRELOAD=$2 ASAN_OPTIONS=log_path=$1/asan:detect_leaks=0:quarantine_size_mb=32"
    echo
}

# gcc's UBSan runtime beside its ASan runtime writes its reports to the
# process's stderr whatever log_path says (its own copy of the sanitizers'
# common code never receives the path): a server's stderr is its log. Each
# log with a report (UBSan's "runtime error:") is copied into folder $1.
ubsan_reports_in() {
    local reports=$1 log
    shift
    for log in "$@"; do
        grep -qs "runtime error:" "$log" || continue
        cp "$log" "$reports/ubsan-in-$(basename "$(dirname "$log")")-$(basename "$log")"
    done
}

# The layer can fail: a server of the sanitize build calls each fault of
# test/sanitize/sanitize_fault.cpp, which must end its backend with the
# sanitizer's report naming the fault (in folder $1 or the server's log,
# then removed). $2: the ASan runtime ('' for none: the heap overflow is not
# called).
sanitize_faults() {
    local reports=$1 runtime=$2 status=0 fault expected found attempt
    section "the faults the layer must see (test/sanitize/sanitize_fault.cpp)"
    mkdir -m 1777 "$reports"
    # shellcheck source=scripts/cluster.sh
    source scripts/cluster.sh
    CLUSTER_SERVER_ENV=$(sanitize_env "$reports" "$runtime")
    cluster_start faults 54409
    unset CLUSTER_SERVER_ENV
    cluster_psql faults -q -c "CREATE EXTENSION snowflake" \
        -c "CREATE FUNCTION snowflake_sanitize_fault(text) RETURNS int AS 'snowflake' LANGUAGE C STRICT"
    for fault in heap-overflow signed-overflow; do
        case $fault in
            heap-overflow) expected="ERROR: AddressSanitizer: heap-buffer-overflow" ;;
            signed-overflow) expected="runtime error: signed integer overflow" ;;
        esac
        [ -n "$runtime" ] || [ "$fault" != heap-overflow ] || continue
        # After the one before, the server restarts (a backend that ended so
        # ends them all): wait for it.
        for attempt in $(seq 60); do
            cluster_psql faults -q -c "SELECT 1" >/dev/null 2>&1 && break
            [ "$attempt" -lt 60 ] && sleep 1
        done
        : >"$SCRATCH/faults/server.log"
        cluster_psql faults -q -c "SELECT snowflake_sanitize_fault('$fault')" >/dev/null 2>&1 || true
        sleep 1
        found=$(grep -ls -e "$expected" "$reports"/* "$SCRATCH/faults/server.log" | sed -n 1p)
        if [ -n "$found" ] && grep -qs "sanitize_fault.cpp" "$found"; then
            echo "sanitize: $fault reported ($expected, in sanitize_fault.cpp)"
        else
            echo "sanitize: $fault was NOT reported (no \"$expected\"): the layer would not see such a fault"
            head -n 40 "$reports"/* 2>/dev/null || true
            cluster_log_tail faults
            status=1
        fi
        rm -f "$reports"/*
    done
    cluster_stop faults
    rm -rf "$SCRATCH/faults"  # its log holds the faults' reports
    rmdir "$reports"
    return $status
}

run_citus() {
    section "Citus (test/citus: a coordinator and workers)"
    local output status
    output=$(mktemp)
    if scripts/citus.sh 2>&1 | tee "$output"; then status=0; else status=${PIPESTATUS[0]}; fi
    if [ "$status" -eq 3 ]; then  # no Citus here: said above, and again at the end
        skipped+=("the citus layer. $(sed -n 's/^citus: //p' "$output" | tail -n 1)")
    fi
    rm -f "$output"
    [ "$status" -ne 3 ] || return 0
    [ "$status" -eq 0 ] || return "$status"
    local tests=("${citus_tests[@]}")
    [ ${#citus_tests[@]} -gt 0 ] || tests=(test/citus/*.pl)
    prove_as_postgres "${tests[@]}"
}

run_regress() {
    local output status
    output=$(mktemp)
    if test/regress/run.sh 2>&1 | tee "$output"; then status=0; else status=${PIPESTATUS[0]}; fi
    if [ "$status" -eq 3 ]; then  # the suites cannot be had here: said above, and again at the end
        skipped+=("the regress layer. $(sed -n 's/^regress: //p' "$output" | tail -n 1)")
    fi
    rm -f "$output"
    [ "$status" -ne 3 ] || return 0
    return "$status"
}

run_ha() {
    section "high-availability drills (test/ha: Patroni, partitions, pgbouncer)"
    # These run as root: they make network namespaces and start the HA tools'
    # daemons; every PostgreSQL server in them runs as postgres. Each drill
    # cleans up what it started, also when it fails.
    local tests=("${ha_tests[@]}")
    [ ${#ha_tests[@]} -gt 0 ] || tests=(test/ha/*.t)
    PG_MAJOR=$PG_MAJOR PG_BIN=$PG_BIN prove -I test/ha -I test/perl --timer "${tests[@]}"
}

# From the supported major before this one (scripts/postgresql.sh) into this
# one: its server from the Debian release that serves it
# (install-deps.sh --previous-major), snowflake built for it from a copy of
# the tree, then test/t/063 with its old cluster on that major, and
# Debian's pg_upgradecluster with the package's hook (test/upgrade, as root).
# Last of the layers: it adds that release's archive to apt's sources.
run_upgrade() {
    section "upgrades from the previous major (pg_upgrade, pg_upgradecluster)"
    local previous release
    if ! read -r previous release < <(postgresql_previous_major); then
        echo "upgrade: PostgreSQL $PG_MAJOR is the first supported major, there is none to upgrade from"
        skipped+=("the upgrade layer: no supported major before $PG_MAJOR (pg_upgrade within $PG_MAJOR is test/t/063, in the tap layer)")
        return 0
    fi
    echo "upgrade: from PostgreSQL $previous ($release) to $PG_MAJOR"
    scripts/install-deps.sh --previous-major
    local old_config=/usr/lib/postgresql/$previous/bin/pg_config build=build/upgrade-from-$previous
    # Minor releases of November 2026 (15.20, 17.12) give every column the
    # option pg_attver, and a server of a major whose minor predates them
    # (forky's 18.6) rejects it: then pg_upgrade and pg_upgradecluster from
    # the one into the other fail for every table, snowflake or not, until
    # the newer major's fix reaches its release.
    if grep -qa pg_attver "/usr/lib/postgresql/$previous/bin/postgres" && ! grep -qa pg_attver "$PG_BIN/postgres"; then
        local versions
        versions="$("$old_config" --version) to $("$PG_CONFIG" --version)"
        echo "upgrade: $versions cannot be upgraded: the first writes the column option pg_attver, which the second does not know"
        skipped+=("the upgrade layer: $versions (pg_upgrade fails for every table: the older major's minor writes the column option pg_attver, which the newer major's does not know yet)")
        return 0
    fi
    section "build and install the extension for PostgreSQL $previous"
    rm -rf "$build"
    mkdir -p "$build"
    cp -r Makefile snowflake.control src sql "$build/"
    make -s -C "$build" PG_CONFIG="$old_config" clean  # the copy's objects are this major's
    make -s -C "$build" PG_CONFIG="$old_config" -j "$(nproc)"
    make -s -C "$build" PG_CONFIG="$old_config" install >/dev/null

    local status=0
    section "pg_upgrade from PostgreSQL $previous (test/t/063)"
    (export SNOWFLAKE_UPGRADE_FROM=/usr/lib/postgresql/$previous; prove_as_postgres test/t/063_pg_upgrade.pl) || status=1
    section "pg_upgradecluster from PostgreSQL $previous (test/upgrade)"
    SNOWFLAKE_UPGRADE_OLD=$previous PG_MAJOR=$PG_MAJOR prove --timer test/upgrade/*.t || status=1
    return $status
}

run_model() {
    section "model (test/model: SPIN, exhaustive, and its mutants)"
    test/model/run.sh
}

run_simulation() {
    section "simulation (test/simulation: seeds, mutants, the claim statement differential)"
    test/simulation/run.sh
}

run_mutants() {
    section "mutants (test/mutants: safeguards removed from the real source, each killed by its tests)"
    if [ "${MUTANTS_SAMPLE:-}" = all ]; then
        test/mutants/run.sh --all
    else
        test/mutants/run.sh
    fi
}

run_clients() {
    section "clients (test/clients: drivers and ORMs, doc/clients.md's recipes)"
    test/clients/run.sh "${clients[@]}"
}

run_monitoring() {
    section "monitoring (test/monitoring: the exporter's queries, the alert rules)"
    test/monitoring/run.sh
}

# Each layer's time, printed as it ends and again at the end: what CI's time
# budget is made of (.ci/run).
timings=()
for layer in "${ALL_LAYERS[@]}"; do
    [[ " ${layers[*]} " == *" $layer "* ]] || continue
    started=$SECONDS
    case $layer in
        unit) run_unit ;;
        model) run_model ;;
        simulation) run_simulation ;;
        fuzz) run_fuzz ;;
        sql) build_extension; run_sql ;;
        sanitize) build_extension; run_sanitize ;;
        sqlsmith) build_extension; section "sqlsmith and random calls (test/sqlsmith)"; test/sqlsmith/run.sh ;;
        tap) build_extension; run_tap ;;
        mutants) run_mutants ;;
        campaign) run_campaign ;;
        ha) build_extension; run_ha ;;
        regress) build_extension; run_regress ;;
        citus) build_extension; run_citus ;;
        upgrade) build_extension; run_upgrade ;;
        clients) build_extension; run_clients ;;
        monitoring) build_extension; run_monitoring ;;
    esac
    timings+=("$layer $((SECONDS - started)) s")
    echo "--- layer $layer passed in $((SECONDS - started)) s"
done
section "all tests passed (PostgreSQL $("$PG_CONFIG" --version | cut -d' ' -f2))"
printf 'time per layer:'; printf ' %s;' "${timings[@]}"; echo
for layer in "${skipped[@]}"; do echo "SKIPPED: $layer"; done
