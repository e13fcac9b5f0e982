#!/usr/bin/env bash
# The benchmark suite of snowflake: what an ID scheme costs, side by side in
# one run, printed as one Markdown document (README: test/bench/README.md).
#
#   1. the C++ generator alone (Google Benchmark): ns per ID;
#   2. SQL throughput, one backend: SELECT count(f) FROM generate_series(...)
#      for snowflake_nextval(), nextval(), gen_random_uuid(), a floor, and
#      on PostgreSQL 18 and later its own uuidv7();
#   3. the same with 2 and 4 backends at once, against 4,096,000 IDs/s;
#   4. pgbench, 2 clients: SELECT and INSERT per scheme, tps and latency;
#   5. a table grown to 10 million rows per scheme: load, size, lookups;
#   6. this tree against the previous release (built from git, run in a
#      second cluster side by side): snowflake_nextval()'s marginal cost;
#      snowflake_decode() with a layout per call against the one-argument form;
#      and the text forms each way: base32 beside public IDs.
#
# It runs against one PostgreSQL: the major scripts/postgresql.sh picks (this
# Debian release's, or PG_MAJOR=NN), or the binaries --pg-bindir names.
#
# Run as root; it installs what it needs (Debian packages), builds the core
# benchmark and the floor extension, installs snowflake from the working tree
# if it can, and runs a throwaway cluster as the postgres user on a Unix
# socket in a temporary directory, removed on exit. The report goes to
# stdout; progress to stderr.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/../.." && pwd)

usage() {
    cat <<'EOF'
Usage: test/bench/run.sh [--quick] [--out FILE] [--only LIST] [--baseline REV] [--pg-bindir DIR] [--no-install] [--keep]

  --quick          smoke run for CI: tiny sizes, one repetition (about a minute)
  --out FILE       also write the Markdown report to FILE
  --only LIST      run only these items, e.g. --only 2,3 (the others show n/a)
  --baseline REV   the release that item 6 compares with (a commit of this
                   repository; default: the last commit at the previous
                   version, the parent of the commit that set snowflake.control's
                   default_version)
  --pg-bindir DIR  PostgreSQL binaries to use (default: those of the major that
                   scripts/postgresql.sh picks, /usr/lib/postgresql/NN/bin)
  --no-install     do not build and install snowflake from the working tree;
                   use whatever is installed (its parts are "n/a" if nothing is)
  --keep           keep the temporary directory (cluster, logs, raw data)
EOF
}

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

QUICK=0
OUT=
ONLY=1,2,3,4,5,6
BASELINE=  # the previous version's last commit, found once git is known to be here
PG_BINDIR=
INSTALL_SNOWFLAKE=1
KEEP=0
REPRODUCE=test/bench/run.sh
while (($#)); do
    case $1 in
        --quick) QUICK=1 REPRODUCE+=" --quick" ;;
        --out)
            (($# >= 2)) || die "--out needs a file"
            OUT=$2
            shift
            ;;
        --out=*) OUT=${1#--out=} ;;
        --only)
            (($# >= 2)) || die "--only needs a list of items, e.g. 2,3"
            ONLY=$2
            shift
            ;;
        --only=*) ONLY=${1#--only=} ;;
        --baseline)
            (($# >= 2)) || die "--baseline needs a commit"
            BASELINE=$2
            REPRODUCE+=" --baseline $2"
            shift
            ;;
        --pg-bindir)
            (($# >= 2)) || die "--pg-bindir needs a directory"
            PG_BINDIR=$2
            shift
            ;;
        --pg-bindir=*) PG_BINDIR=${1#--pg-bindir=} ;;
        --no-install) INSTALL_SNOWFLAKE=0 ;;
        --keep) KEEP=1 ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            usage >&2
            die "unknown option: $1"
            ;;
    esac
    shift
done
[[ $ONLY =~ ^[1-6](,[1-6])*$ ]] || die "--only takes item numbers 1-6, e.g. 2,3"
[[ $ONLY == 1,2,3,4,5,6 ]] || REPRODUCE+=" --only $ONLY"
[[ $EUID -eq 0 ]] || die "run as root (it installs packages and runs PostgreSQL as the postgres user)"
if [[ -n $OUT ]]; then
    mkdir -p "$(dirname "$OUT")"
    OUT=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
fi

if ((QUICK)); then
    SQL_ROWS=200000 SQL_REPS=1 MANY_REPS=1
    CORE_MIN_TIME=0.05 CORE_REPS=1
    PGBENCH_SECONDS=2 PGBENCH_REPS=1
    BIG_ROWS=200000 BIG_BATCH=20000
    LOOKUP_KEYS=200 LOOKUP_PASSES=1 LOOKUP_BLOCK=10 RANGE_RUNS=3
else
    SQL_ROWS=4000000 SQL_REPS=7 MANY_REPS=5
    CORE_MIN_TIME=0.5 CORE_REPS=5
    PGBENCH_SECONDS=10 PGBENCH_REPS=5
    BIG_ROWS=10000000 BIG_BATCH=100000
    LOOKUP_KEYS=1000 LOOKUP_PASSES=5 LOOKUP_BLOCK=10 RANGE_RUNS=20
fi
HISTORY_DAYS=30
PORT=54329
BASE_PORT=54330

if [[ -z $PG_BINDIR ]]; then
    # shellcheck source=scripts/postgresql.sh
    source "$REPO/scripts/postgresql.sh" # PG_MAJOR, PG_CONFIG, PG_BIN
    PG_BINDIR=$PG_BIN
fi
PG_BINDIR=${PG_BINDIR%/}

# --- packages and builds -----------------------------------------------------

# Debian's PostgreSQL (/usr/lib/postgresql/NN/bin): the project's own install
# step for that major installs it and what building needs (--runtime; no test
# layer's packages). Any other PostgreSQL is the caller's. The benchmark's own
# tools are installed here.
install_packages() {
    if [[ $PG_BINDIR =~ ^/usr/lib/postgresql/([0-9]+)/bin$ ]]; then
        PG_MAJOR=${BASH_REMATCH[1]} PG_CONFIG='' "$REPO/scripts/install-deps.sh" --runtime >&2
    fi
    # git: item 6 builds the previous release from this repository's history.
    local packages=(libbenchmark-dev cmake g++ make jq git)
    local missing=() p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

build_core_bench() {
    local build=$REPO/build/bench-core
    log "building the core benchmark in ${build#"$REPO"/}"
    if ! { cmake -S "$BENCH_DIR/core" -B "$build" -DCMAKE_BUILD_TYPE=Release &&
        cmake --build "$build" -j "$(nproc)"; } >"$WORK/build-core.log" 2>&1; then
        tail -n 30 "$WORK/build-core.log" >&2
        die "the core benchmark did not build"
    fi
    CORE_BIN=$build/snowflake_core_bench
}

# Built out of the tree, in the temporary directory; installed into PostgreSQL.
install_floor() {
    log "building and installing snowflake_bench_floor"
    cp -r "$BENCH_DIR/floor" "$WORK/floor"
    if ! make -C "$WORK/floor" PG_CONFIG="$PG_CONFIG" with_llvm=no install \
        >"$WORK/build-floor.log" 2>&1; then
        tail -n 30 "$WORK/build-floor.log" >&2
        die "snowflake_bench_floor did not build"
    fi
}

install_snowflake() {
    SNOWFLAKE_SOURCE="the installed build (not rebuilt: --no-install)"
    ((INSTALL_SNOWFLAKE)) || return 0
    if [[ ! -f $REPO/Makefile ]]; then
        SNOWFLAKE_SOURCE="the installed build (no Makefile at the repository root)"
        return 0
    fi
    log "building and installing snowflake from the working tree"
    if make -C "$REPO" -j "$(nproc)" PG_CONFIG="$PG_CONFIG" >"$WORK/build-snowflake.log" 2>&1 &&
        make -C "$REPO" PG_CONFIG="$PG_CONFIG" install >>"$WORK/build-snowflake.log" 2>&1; then
        SNOWFLAKE_SOURCE="built and installed from the working tree by this run"
    else
        tail -n 20 "$WORK/build-snowflake.log" >&2
        log "warning: snowflake did not build; using whatever is installed"
        SNOWFLAKE_SOURCE="the installed build (building the working tree failed)"
    fi
}

# --- the cluster -------------------------------------------------------------

# From /, which postgres can always enter (the caller may stand in /root).
as_pg() { (cd / && runuser -u postgres -- "$@"); }

# Against the main cluster, or the one SQL_SOCK and SQL_PORT name (item 6's
# baseline: on_baseline sql_run ...).
sql() {
    as_pg "$PG_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "${SQL_SOCK:-$SOCK}" \
        -p "${SQL_PORT:-$PORT}" -d bench "$@"
}

# Records KEY = VALUE for the report.
fact() {
    sql -v k="$1" -v v="$2" <<'SQL'
INSERT INTO bench.facts VALUES (:'k', :'v')
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
SQL
}

shared_buffers_mb() {
    local mem_mb
    mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
    if ((QUICK)); then
        echo 256
    elif ((mem_mb / 4 > 4096)); then
        echo 4096
    elif ((mem_mb / 4 < 128)); then
        echo 128
    else
        echo $((mem_mb / 4))
    fi
}

# The settings every cluster of the run has.
cluster_conf() {
    cat <<EOF

# --- snowflake benchmark suite (test/bench/run.sh) ---
listen_addresses = ''
port = $1
unix_socket_directories = '$2'
max_connections = 50
shared_buffers = $3
work_mem = '512MB'                  # generate_series() of 4M rows stays in memory
maintenance_work_mem = '1GB'
fsync = on
synchronous_commit = on
full_page_writes = on
max_wal_size = '16GB'               # no checkpoint forced by WAL volume mid-run
min_wal_size = '1GB'
checkpoint_timeout = '30min'
jit = off                           # no compile time in the timings
max_parallel_workers_per_gather = 0 # one backend means one backend
log_min_messages = warning
EOF
}

start_cluster() {
    DATA=$WORK/data
    SOCK=$WORK/sock
    install -d -o postgres -g postgres -m 700 "$SOCK" "$DATA"
    log "initdb in $DATA"
    as_pg "$PG_BINDIR/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C --no-sync \
        >"$WORK/initdb.log" 2>&1 || {
        cat "$WORK/initdb.log" >&2
        die "initdb failed"
    }
    SHARED_BUFFERS=$(shared_buffers_mb)MB
    cluster_conf "$PORT" "$SOCK" "$SHARED_BUFFERS" >>"$DATA/postgresql.conf"
    cat >>"$DATA/postgresql.conf" <<EOF
include_if_exists = 'bench_snowflake.conf'
EOF
    if [[ -f $PKGLIBDIR/snowflake.so && -f $SHAREDIR/extension/snowflake.control ]]; then
        # A random AES-128 key for public IDs (item 6).
        printf 'A %s\n' "$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" |
            install -o postgres -g postgres -m 600 /dev/stdin "$WORK/public_id.keys"
        install -o postgres -g postgres -m 600 /dev/stdin "$DATA/bench_snowflake.conf" <<EOF
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 1
snowflake.worker_id = 1
snowflake.public_id_keys_file = '$WORK/public_id.keys'
EOF
        log "starting the cluster with snowflake preloaded"
        if ! as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -l "$WORK/pg/server.log" -w -t 300 start \
            >/dev/null 2>&1; then
            tail -n 20 "$WORK/pg/server.log" >&2
            SNOWFLAKE_STATUS="n/a: the server did not start with shared_preload_libraries = 'snowflake'"
            log "warning: $SNOWFLAKE_STATUS; starting without it"
            rm -f "$DATA/bench_snowflake.conf"
        fi
    else
        SNOWFLAKE_STATUS="n/a: not installed ($PKGLIBDIR/snowflake.so)"
        log "warning: $SNOWFLAKE_STATUS"
    fi
    if [[ ! -f $DATA/postmaster.pid ]]; then
        log "starting the cluster"
        as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -l "$WORK/pg/server.log" -w -t 300 start >/dev/null ||
            {
                tail -n 30 "$WORK/pg/server.log" >&2
                die "the server did not start"
            }
    fi
    as_pg "$PG_BINDIR/createdb" -h "$SOCK" -p "$PORT" bench
}

setup_database() {
    cp "$BENCH_DIR"/sql/*.sql "$WORK/pg/"
    sql -c 'CREATE EXTENSION pgstattuple' -c 'CREATE EXTENSION snowflake_bench_floor' \
        -c 'CREATE SEQUENCE bench_seq'
    sql -f "$WORK/pg/setup.sql"
    HAVE_SNOWFLAKE=0
    HAVE_MAX_LEAD=0
    HAVE_LAYOUTS=0
    HAVE_PUBLIC_IDS=0
    # PostgreSQL's own time-ordered UUIDs, from 18 on: compared where they exist.
    HAVE_UUIDV7=0
    [[ $(sql -c "SELECT to_regprocedure('uuidv7()') IS NOT NULL") == t ]] && HAVE_UUIDV7=1
    fact pg.uuidv7 "$HAVE_UUIDV7"
    if [[ -z ${SNOWFLAKE_STATUS:-} ]]; then
        local err
        if err=$(sql -c 'CREATE EXTENSION snowflake' -c 'SELECT snowflake_nextval()' 2>&1 >/dev/null); then
            HAVE_SNOWFLAKE=1
            SNOWFLAKE_STATUS="$(sql -c "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"), $SNOWFLAKE_SOURCE"
            [[ $(sql -c "SELECT count(*) FROM pg_settings WHERE name = 'snowflake.max_lead'") == 1 ]] &&
                HAVE_MAX_LEAD=1
            [[ $(sql -c "SELECT to_regprocedure('snowflake_decode(bigint,text)') IS NOT NULL") == t ]] &&
                HAVE_LAYOUTS=1
            # Public IDs (1.7): with the key file start_cluster wrote.
            sql -c 'SELECT snowflake_to_public(1)' >/dev/null 2>&1 && HAVE_PUBLIC_IDS=1
            ((HAVE_MAX_LEAD)) || log "warning: no snowflake.max_lead setting; its variants are n/a"
        else
            SNOWFLAKE_STATUS="n/a: CREATE EXTENSION snowflake or snowflake_nextval() failed: ${err//$'\n'/ }"
            log "warning: $SNOWFLAKE_STATUS"
        fi
    fi
}

stop_cluster() {
    local data
    for data in ${DATA:-} ${BASE_DATA:-}; do
        [[ -f $data/postmaster.pid ]] || continue
        as_pg "$PG_BINDIR/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
            as_pg "$PG_BINDIR/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1
    done
}

BACKGROUND=()
cleanup() {
    local rc=$?
    set +e
    local pid
    for pid in "${BACKGROUND[@]}"; do kill "$pid" 2>/dev/null; done
    stop_cluster
    if [[ -n ${WORK:-} && -d $WORK ]]; then
        if ((KEEP)); then log "kept $WORK"; else rm -rf "$WORK"; fi
    fi
    exit "$rc"
}

# --- item 1: the core ----------------------------------------------------------

run_core() {
    log "item 1: core benchmark"
    "$CORE_BIN" --benchmark_min_time="$CORE_MIN_TIME" --benchmark_repetitions="$CORE_REPS" \
        --benchmark_report_aggregates_only=true --benchmark_time_unit=ns \
        --benchmark_out="$WORK/core.json" --benchmark_out_format=json >"$WORK/core.txt" 2>&1 || {
        cat "$WORK/core.txt" >&2
        die "the core benchmark failed"
    }
    # With one repetition there are no aggregates: the single run is the median.
    jq -r --argjson reps "$CORE_REPS" '
        .benchmarks[]
        | select((.run_type == "aggregate" and .aggregate_name == "median")
                 or ($reps == 1 and .run_type == "iteration"))
        | [.run_name, .threads, .items_per_second,
           (if .time_unit == "ns" then .cpu_time else null end),
           .waits_per_id, .allocs_per_id,
           (.state_bytes | if . == null then null else floor end)]  # 1.8 writes 64.0
        | @csv' "$WORK/core.json" >"$WORK/core.csv"
}

load_core_results() {
    sql -c '\copy bench.core FROM pstdin (FORMAT csv)' <"$WORK/core.csv"
    fact core.method "repetitions: $CORE_REPS, each at least ${CORE_MIN_TIME} s, the median reported"
}

# --- items 2 and 3: SQL throughput ---------------------------------------------

# Sets snowflake.max_lead and waits until a new backend sees it: once one
# does, the postmaster has reloaded, and every backend forked later has it.
set_max_lead() {
    local want=$1 now _
    ((HAVE_MAX_LEAD)) || return 1
    now=$(sql -c "SELECT setting FROM pg_settings WHERE name = 'snowflake.max_lead'")
    [[ $now == "$want" ]] && return 0
    sql -c "ALTER SYSTEM SET snowflake.max_lead = $want" -c 'SELECT pg_reload_conf()' >/dev/null
    for _ in {1..200}; do
        now=$(sql -c "SELECT setting FROM pg_settings WHERE name = 'snowflake.max_lead'")
        [[ $now == "$want" ]] && return 0
        sleep 0.05
    done
    log "warning: snowflake.max_lead did not become $want"
    return 1
}

write_count_script() {
    cat >"$WORK/pg/count.sql" <<'SQL'
-- One backend's part of a run of items 2 and 3 (variables from run.sh).
\set ON_ERROR_STOP 1
SELECT pg_sleep(greatest(0, :start - extract(epoch FROM clock_timestamp())::float8));
\if :packing
SELECT started, finished, min_id, max_id FROM bench.time_packing(:rows) \gset
\else
SELECT started, finished FROM bench.time_query(:'query') \gset
\set min_id NULL
\set max_id NULL
\endif
INSERT INTO bench.sql_runs VALUES (
    :'item', :'scheme', :backends, :rep, :session, :rows, :started, :finished,
    :min_id, :max_id,
    (SELECT setting::int FROM pg_settings WHERE name = 'snowflake.max_lead'));
-- With a lead, the generator may now be ahead of the clock: let the clock
-- catch up, so that the next run starts from the same state.
\if :snowflake
SELECT pg_sleep(greatest(0, ((snowflake_nextval() >> 22) + 1288834974657) / 1000.0
                            - extract(epoch FROM clock_timestamp())::float8 + 0.002));
\endif
SQL
}

# sql_run ITEM SCHEME BACKENDS REP ROWS [LABEL]: BACKENDS backends start a
# query over ROWS rows at the same moment: SELECT count(f) FROM
# generate_series(...), or for packing_lead0 the packing query at max_lead =
# 0. Recorded as LABEL (default: SCHEME).
sql_run() {
    local item=$1 scheme=$2 backends=$3 rep=$4 rows=$5 label=${6:-$2} expr=none snowflake=0 packing=0
    local query=
    case $scheme in
        floor) expr='bench_floor()' ;;
        random) expr='random()' ;;
        sequence) expr="nextval('bench_seq')" ;;
        uuid) expr='gen_random_uuid()' ;;
        uuidv7)
            ((HAVE_UUIDV7)) || return 0
            expr='uuidv7()'
            ;;
        snowflake_lead1000 | snowflake_lead0 | packing_lead0)
            ((HAVE_SNOWFLAKE)) || return 0
            expr='snowflake_nextval()'
            snowflake=1
            [[ $scheme == packing_* ]] && packing=1
            set_max_lead "${scheme##*_lead}" || return 0
            ;;
        # snowflake_generate(n) for the same rows (item 6, issue 44).
        generate_lead1000)
            ((HAVE_SNOWFLAKE)) || return 0
            query="SELECT count(id) FROM snowflake_generate($rows) AS id"
            snowflake=1
            set_max_lead 1000 || return 0
            ;;
        # Decoding the floor's counter: IDs 1, 2, 3, ...
        decode)
            ((HAVE_SNOWFLAKE)) || return 0
            expr='snowflake_decode(bench_floor())'
            ;;
        decode_preset)
            ((HAVE_LAYOUTS)) || return 0
            expr="snowflake_decode(bench_floor(), 'twitter')"
            ;;
        decode_specification)
            ((HAVE_LAYOUTS)) || return 0
            expr="snowflake_decode(bench_floor(), 'time:41 datacenter:5 worker:5 sequence:12')"
            ;;
        # The text forms of the floor's counter, each way (issue 40): from_*
        # of to_*, whose own cost the report subtracts.
        to_base32)
            ((HAVE_SNOWFLAKE)) || return 0
            expr='snowflake_to_base32(bench_floor())'
            ;;
        base32_round_trip)
            ((HAVE_SNOWFLAKE)) || return 0
            expr='snowflake_from_base32(snowflake_to_base32(bench_floor()))'
            ;;
        to_public)
            ((HAVE_PUBLIC_IDS)) || return 0
            expr='snowflake_to_public(bench_floor())'
            ;;
        public_round_trip)
            ((HAVE_PUBLIC_IDS)) || return 0
            expr='snowflake_from_public(snowflake_to_public(bench_floor()))'
            ;;
        *) die "unknown scheme $scheme" ;;
    esac
    local start delay=0 session pids=() failed=0
    ((backends > 1)) && delay=0.5
    start=$(awk -v now="$(date +%s.%N)" -v delay="$delay" 'BEGIN { printf "%.3f", now + delay }')
    for ((session = 1; session <= backends; session++)); do
        sql -f "$WORK/pg/count.sql" -v start="$start" -v snowflake="$snowflake" \
            -v packing="$packing" -v query="${query:-SELECT count($expr) FROM generate_series(1, $rows)}" \
            -v item="$item" -v scheme="$label" -v backends="$backends" -v rep="$rep" \
            -v session="$session" -v rows="$rows" >/dev/null 2>"$WORK/count.$session.err" &
        pids+=("$!")
        BACKGROUND+=("$!")
    done
    local pid
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    BACKGROUND=()
    if ((failed)); then
        log "warning: $item $label x$backends failed: $(head -c 300 "$WORK"/count.*.err)"
    fi
}

SQL_SCHEMES=(floor snowflake_lead1000 sequence uuid uuidv7 snowflake_lead0 random packing_lead0)

run_sql_one() {
    log "item 2: SQL throughput, one backend (repetitions: $SQL_REPS, rows: $SQL_ROWS)"
    local rep scheme
    for ((rep = 1; rep <= SQL_REPS; rep++)); do
        for scheme in "${SQL_SCHEMES[@]}"; do sql_run one "$scheme" 1 "$rep" "$SQL_ROWS"; done
    done
}

run_sql_many() {
    log "item 3: SQL throughput, 2 and 4 backends at once (repetitions: $MANY_REPS)"
    local rep backends scheme
    for ((rep = 1; rep <= MANY_REPS; rep++)); do
        for backends in 2 4; do
            for scheme in "${SQL_SCHEMES[@]}"; do
                [[ $scheme == random ]] && continue
                sql_run many "$scheme" "$backends" "$rep" "$SQL_ROWS"
            done
        done
    done
}

# --- item 4: pgbench -------------------------------------------------------------

PGBENCH_SCHEMES=(select_floor select_snowflake select_sequence select_uuid select_uuidv7
    insert_snowflake insert_bigserial insert_uuid insert_uuidv7)

setup_pgbench() {
    install -d -o postgres -g postgres "$WORK/pg/pgbench"
    local dir=$WORK/pg/pgbench
    echo 'SELECT bench_floor();' >"$dir/select_floor.sql"
    echo 'SELECT snowflake_nextval();' >"$dir/select_snowflake.sql"
    echo "SELECT nextval('bench_seq');" >"$dir/select_sequence.sql"
    echo 'SELECT gen_random_uuid();' >"$dir/select_uuid.sql"
    echo 'INSERT INTO ins_snowflake (payload) VALUES (1);' >"$dir/insert_snowflake.sql"
    echo 'INSERT INTO ins_bigserial (payload) VALUES (1);' >"$dir/insert_bigserial.sql"
    echo 'INSERT INTO ins_uuid (payload) VALUES (1);' >"$dir/insert_uuid.sql"
    echo 'SELECT uuidv7();' >"$dir/select_uuidv7.sql"
    echo 'INSERT INTO ins_uuidv7 (payload) VALUES (1);' >"$dir/insert_uuidv7.sql"
    sql <<'SQL'
CREATE TABLE ins_bigserial (id bigserial PRIMARY KEY, payload int NOT NULL);
CREATE TABLE ins_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), payload int NOT NULL);
SQL
    if ((HAVE_SNOWFLAKE)); then
        sql -c 'CREATE TABLE ins_snowflake (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload int NOT NULL)'
    fi
    if ((HAVE_UUIDV7)); then
        sql -c 'CREATE TABLE ins_uuidv7 (id uuid PRIMARY KEY DEFAULT uuidv7(), payload int NOT NULL)'
    fi
}

pgbench_run() {
    local scheme=$1 rep=$2 out tps
    case $scheme in
        *snowflake) ((HAVE_SNOWFLAKE)) || return 0 ;;
        *uuidv7) ((HAVE_UUIDV7)) || return 0 ;;
    esac
    case $scheme in insert_*) sql -c "TRUNCATE ins_${scheme#insert_}" ;; esac
    sql -c CHECKPOINT
    if ! out=$(as_pg "$PG_BINDIR/pgbench" -h "$SOCK" -p "$PORT" -n -M prepared -c 2 -j 2 \
        -T "$PGBENCH_SECONDS" -f "$WORK/pg/pgbench/$scheme.sql" \
        -l --log-prefix="$WORK/pg/pgbench/log.$scheme.$rep" bench 2>&1); then
        log "warning: pgbench $scheme failed: $(tail -n 3 <<<"$out")"
        return 0
    fi
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' <<<"$out")
    [[ -n $tps ]] || {
        log "warning: no tps in the output of pgbench $scheme"
        return 0
    }
    sql -c "INSERT INTO bench.pgbench VALUES ('$scheme', $rep, $tps)"
}

# p50, p95, p99 (nearest rank) of every transaction of a scheme's logs; the
# third field of a pgbench log line is the latency in microseconds.
pgbench_latencies() {
    local scheme=$1 logs
    logs=("$WORK/pg/pgbench/log.$scheme".*)
    [[ -e ${logs[0]} ]] || return 0
    awk '{ print $3 }' "${logs[@]}" | sort -n | awk -v scheme="$scheme" '
        function rank(p,  r) { r = p * NR; if (r > int(r)) r = int(r) + 1; return r < 1 ? 1 : r }
        { v[NR] = $1 }
        END {
            if (NR == 0) exit
            printf "%s,%d,%.4f,%.4f,%.4f\n", scheme, NR,
                   v[rank(0.50)] / 1000, v[rank(0.95)] / 1000, v[rank(0.99)] / 1000
        }' | sql -c '\copy bench.pgbench_latency FROM pstdin (FORMAT csv)'
}

run_pgbench() {
    ((HAVE_SNOWFLAKE)) && ((HAVE_MAX_LEAD)) && sql -c 'ALTER SYSTEM RESET snowflake.max_lead' \
        -c 'SELECT pg_reload_conf()' >/dev/null
    setup_pgbench
    log "item 4: pgbench (repetitions: $PGBENCH_REPS, ${PGBENCH_SECONDS} s per run)"
    local rep scheme
    for ((rep = 1; rep <= PGBENCH_REPS; rep++)); do
        for scheme in "${PGBENCH_SCHEMES[@]}"; do pgbench_run "$scheme" "$rep"; done
    done
    for scheme in "${PGBENCH_SCHEMES[@]}"; do pgbench_latencies "$scheme"; done
}

# --- item 5: a table grown to BIG_ROWS rows ------------------------------------

run_big() {
    local started=$SECONDS schemes=(bigserial uuid) s
    ((HAVE_SNOWFLAKE)) && schemes=(snowflake "${schemes[@]}")
    ((HAVE_UUIDV7)) && schemes+=(uuidv7)
    log "item 5: growing ${schemes[*]} to $BIG_ROWS rows each, $BIG_BATCH rows per INSERT"
    sql -v rows="$BIG_ROWS" -v batch="$BIG_BATCH" -v days="$HISTORY_DAYS" <<'SQL'
CREATE TABLE big_bigserial (
    id bigserial PRIMARY KEY,
    created_at timestamptz NOT NULL,
    payload int NOT NULL
) WITH (autovacuum_enabled = off);
CREATE INDEX big_bigserial_created_at ON big_bigserial (created_at);
CREATE TABLE big_uuid (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    created_at timestamptz NOT NULL,
    payload int NOT NULL
) WITH (autovacuum_enabled = off);
CREATE INDEX big_uuid_created_at ON big_uuid (created_at);
INSERT INTO bench.big_meta
VALUES (date_trunc('second', now()), :days::bigint * 86400000, :rows, :batch);
SQL
    if ((HAVE_SNOWFLAKE)); then
        sql <<'SQL'
CREATE TABLE big_snowflake (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    payload int NOT NULL
) WITH (autovacuum_enabled = off);
SQL
    fi
    if ((HAVE_UUIDV7)); then
        sql <<'SQL'
CREATE TABLE big_uuidv7 (
    id uuid PRIMARY KEY DEFAULT uuidv7(),
    payload int NOT NULL
) WITH (autovacuum_enabled = off);
SQL
    fi
    sql -c CHECKPOINT
    sql -c "CALL bench.load_all('{$(
        IFS=,
        echo "${schemes[*]}"
    )}')" 2>&1 | sed 's/^/    /' >&2

    local t0
    for s in "${schemes[@]}"; do
        t0=$(date +%s%N)
        sql -c "VACUUM (ANALYZE) big_$s"
        sql -c "INSERT INTO bench.vacuum VALUES ('$s', $((($(date +%s%N) - t0) / 1000000)))"
        sql -c "SELECT bench.record_sizes('$s')" >/dev/null
    done
    sql -c CHECKPOINT

    log "item 5: point lookups and range scans"
    for s in "${schemes[@]}"; do
        sql -c "CREATE TABLE bench.keys_$s AS
                SELECT id FROM big_$s
                       TABLESAMPLE BERNOULLI (least(100, 300.0 * $LOOKUP_KEYS / $BIG_ROWS))
                       REPEATABLE (42)
                 ORDER BY random() LIMIT $LOOKUP_KEYS"
    done
    local pass run
    for ((pass = 1; pass <= LOOKUP_PASSES; pass++)); do
        for s in "${schemes[@]}"; do
            sql -c "INSERT INTO bench.lookups
                    SELECT '$s', $pass, us
                      FROM bench.lookup_$s((SELECT array_agg(id) FROM bench.keys_$s),
                                           $LOOKUP_BLOCK) AS us"
        done
    done
    for ((run = 1; run <= RANGE_RUNS; run++)); do
        for s in "${schemes[@]}"; do
            sql -c "INSERT INTO bench.ranges
                    SELECT '$s', $run, r.ms, r.matched
                      FROM bench.big_meta m,
                           bench.range_$s(m.history_end - interval '1 hour', m.history_end) AS r"
        done
    done
    for s in "${schemes[@]}"; do
        sql -v s="$s" <<'SQL' >/dev/null
SELECT bench.record_plan(:'s', 'lookup',
           format('SELECT payload FROM big_%s WHERE id = %L', :'s',
                  (SELECT id FROM bench.keys_:s LIMIT 1)));
SELECT bench.record_plan(:'s', 'range',
           CASE WHEN :'s' = 'snowflake'
                THEN bench.snowflake_range_query(history_end - interval '1 hour', history_end)
                WHEN :'s' = 'uuidv7'
                THEN bench.uuidv7_range_query(history_end - interval '1 hour', history_end)
                ELSE format('SELECT count(*), sum(payload) FROM big_%s '
                            'WHERE created_at BETWEEN %L AND %L',
                            :'s', history_end - interval '1 hour', history_end) END)
  FROM bench.big_meta;
SQL
    done
    fact big.duration "$(duration $((SECONDS - started)))"
    fact big.lookup_keys "$LOOKUP_KEYS"
    fact big.lookup_passes "$LOOKUP_PASSES"
    fact big.lookup_block "$LOOKUP_BLOCK"
    fact big.range_runs "$RANGE_RUNS"
}

# --- item 6: the previous release, and layouts per call ----------------------------

# The previous release's library, built from git into the temporary directory
# and never installed: a second cluster preloads it by its path, and reaches
# its snowflake_nextval() through a function made with that path, so both
# releases run side by side on the same PostgreSQL.
build_baseline() {
    BASELINE_SO=
    if [ -z "$BASELINE" ] && command -v git >/dev/null; then
        BASELINE=$(git -C "$REPO" log -1 --format=%H -G'^default_version' -- snowflake.control 2>/dev/null)
        [ -z "$BASELINE" ] || BASELINE=$(git -C "$REPO" rev-parse --short "$BASELINE^" 2>/dev/null)
    fi
    if [ -z "$BASELINE" ]; then
        BASELINE_STATUS="n/a: no earlier version in this repository's history (or git is missing)"
        log "warning: $BASELINE_STATUS"
        return 0
    fi
    if ! command -v git >/dev/null ||
        ! git -C "$REPO" rev-parse -q --verify "$BASELINE^{commit}" >/dev/null 2>&1; then
        BASELINE_STATUS="n/a: commit $BASELINE is not in this repository (or git is missing)"
        log "warning: $BASELINE_STATUS"
        return 0
    fi
    local dir=$WORK/baseline
    mkdir -p "$dir"
    log "building snowflake $BASELINE, the baseline of item 6"
    if git -C "$REPO" archive "$BASELINE" | tar -x -C "$dir" &&
        make -C "$dir" -j "$(nproc)" PG_CONFIG="$PG_CONFIG" with_llvm=no \
            >"$WORK/build-baseline.log" 2>&1; then
        BASELINE_SO=$dir/snowflake.so
        BASELINE_STATUS="$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$dir/snowflake.control") ($(git -C "$REPO" rev-parse --short "$BASELINE^{commit}"))"
    else
        tail -n 20 "$WORK/build-baseline.log" >&2
        BASELINE_STATUS="n/a: $BASELINE did not build"
        log "warning: $BASELINE_STATUS"
    fi
}

on_baseline() { SQL_SOCK=$BASE_SOCK SQL_PORT=$BASE_PORT "$@"; }

# The second cluster: the settings of the main one (shared_buffers aside,
# which generate_series does not touch), with the baseline preloaded.
start_baseline_cluster() {
    HAVE_BASELINE=0
    HAVE_BASELINE_PUBLIC_IDS=0
    [[ -n $BASELINE_SO ]] || return 0
    BASELINE_PUBLIC_IDS=0
    grep -qs 'FUNCTION snowflake_to_public' "$(dirname "$BASELINE_SO")"/sql/snowflake--*.sql &&
        [[ -f $WORK/public_id.keys ]] && BASELINE_PUBLIC_IDS=1
    BASE_DATA=$WORK/baseline-data
    BASE_SOCK=$WORK/baseline-sock
    install -d -o postgres -g postgres -m 700 "$BASE_SOCK" "$BASE_DATA"
    as_pg "$PG_BINDIR/initdb" -D "$BASE_DATA" -U postgres -A trust -E UTF8 --locale=C --no-sync \
        >"$WORK/initdb-baseline.log" 2>&1 || {
        cat "$WORK/initdb-baseline.log" >&2
        die "initdb of the baseline cluster failed"
    }
    {
        cluster_conf "$BASE_PORT" "$BASE_SOCK" 256MB
        # By name, found first in the baseline's directory: 1.6 and earlier
        # start their background workers from "snowflake" through
        # dynamic_library_path, which would otherwise be this tree's
        # installed file (its settings defined twice: no worker, no ID).
        echo "dynamic_library_path = '$(dirname "$BASELINE_SO"):\$libdir'"
        echo "shared_preload_libraries = 'snowflake'"
        echo 'snowflake.datacenter_id = 1'
        echo 'snowflake.worker_id = 1'
        # A baseline with public IDs (1.7 on) gets this tree's key.
        if ((BASELINE_PUBLIC_IDS)); then
            echo "snowflake.public_id_keys_file = '$WORK/public_id.keys'"
        fi
    } >>"$BASE_DATA/postgresql.conf"
    log "starting the baseline cluster (snowflake $BASELINE_STATUS)"
    if ! as_pg "$PG_BINDIR/pg_ctl" -D "$BASE_DATA" -l "$WORK/pg/baseline.log" -w -t 300 start \
        >/dev/null 2>&1; then
        tail -n 20 "$WORK/pg/baseline.log" >&2
        BASELINE_STATUS="n/a: the baseline cluster did not start"
        log "warning: $BASELINE_STATUS"
        return 0
    fi
    as_pg "$PG_BINDIR/createdb" -h "$BASE_SOCK" -p "$BASE_PORT" bench
    on_baseline sql -c 'CREATE EXTENSION pgstattuple' -c 'CREATE EXTENSION snowflake_bench_floor' >/dev/null
    on_baseline sql -f "$WORK/pg/setup.sql" >/dev/null
    on_baseline sql -c "CREATE FUNCTION snowflake_nextval() RETURNS bigint
                        AS '$BASELINE_SO', 'snowflake_nextval' LANGUAGE C VOLATILE" >/dev/null
    on_baseline sql -c "CREATE FUNCTION snowflake_generate(integer) RETURNS SETOF bigint
                        AS '$BASELINE_SO', 'snowflake_generate' LANGUAGE C VOLATILE STRICT" >/dev/null
    if ((BASELINE_PUBLIC_IDS)); then
        on_baseline sql -c "CREATE FUNCTION snowflake_to_public(bigint, text DEFAULT '') RETURNS text
                            AS '$BASELINE_SO', 'snowflake_to_public' LANGUAGE C STABLE STRICT" \
            -c "CREATE FUNCTION snowflake_from_public(text, text DEFAULT '') RETURNS bigint
                AS '$BASELINE_SO', 'snowflake_from_public' LANGUAGE C STABLE STRICT" >/dev/null &&
            on_baseline sql -c 'SELECT snowflake_to_public(1)' >/dev/null 2>&1 &&
            HAVE_BASELINE_PUBLIC_IDS=1
    fi
    # From 1.5 on, a new data directory issues once its check of the databases
    # has found no extension there (at most seconds, longer on a loaded
    # machine). A minute in all: one call may itself wait 15 s for the check.
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        if on_baseline sql -c 'SELECT snowflake_nextval()' >/dev/null 2>"$WORK/baseline-first.err"; then
            HAVE_BASELINE=1
            return 0
        fi
        sleep 1
    done
    BASELINE_STATUS="n/a: the baseline cluster issued no ID in 60 s: $(head -n 1 "$WORK/baseline-first.err")"
    log "warning: $BASELINE_STATUS"
}

# Interleaved in each repetition: the floor, snowflake_nextval() and
# snowflake_generate(n) at max_lead = 1000 and public IDs each way in this
# tree's cluster (the extension created: its snowflake_dump_bound raised as
# in production) and in the baseline's (public IDs where it has them), then
# the floor, the three decodes and base32 each way. The baseline's rows are copied into the main
# cluster for the report.
run_release() {
    build_baseline
    start_baseline_cluster
    log "item 6: this tree against $BASELINE_STATUS, and layouts per call (repetitions: $SQL_REPS)"
    local rep
    for ((rep = 1; rep <= SQL_REPS; rep++)); do
        sql_run release floor 1 "$rep" "$SQL_ROWS" floor_this
        sql_run release snowflake_lead1000 1 "$rep" "$SQL_ROWS" nextval_this
        sql_run release generate_lead1000 1 "$rep" "$SQL_ROWS" generate_this
        sql_run release to_public 1 "$rep" "$SQL_ROWS" to_public_this
        sql_run release public_round_trip 1 "$rep" "$SQL_ROWS" public_round_trip_this
        if ((HAVE_BASELINE)); then
            on_baseline sql_run release floor 1 "$rep" "$SQL_ROWS" floor_baseline
            HAVE_SNOWFLAKE=1 HAVE_MAX_LEAD=1 \
                on_baseline sql_run release snowflake_lead1000 1 "$rep" "$SQL_ROWS" nextval_baseline
            HAVE_SNOWFLAKE=1 HAVE_MAX_LEAD=1 \
                on_baseline sql_run release generate_lead1000 1 "$rep" "$SQL_ROWS" generate_baseline
            HAVE_PUBLIC_IDS=$HAVE_BASELINE_PUBLIC_IDS \
                on_baseline sql_run release to_public 1 "$rep" "$SQL_ROWS" to_public_baseline
            HAVE_PUBLIC_IDS=$HAVE_BASELINE_PUBLIC_IDS \
                on_baseline sql_run release public_round_trip 1 "$rep" "$SQL_ROWS" public_round_trip_baseline
        fi
        sql_run decode floor 1 "$rep" "$SQL_ROWS"
        sql_run decode decode 1 "$rep" "$SQL_ROWS"
        sql_run decode decode_preset 1 "$rep" "$SQL_ROWS"
        sql_run decode decode_specification 1 "$rep" "$SQL_ROWS"
        sql_run decode to_base32 1 "$rep" "$SQL_ROWS"
        sql_run decode base32_round_trip 1 "$rep" "$SQL_ROWS"
    done
    if ((HAVE_BASELINE)); then
        on_baseline sql -c '\copy (SELECT * FROM bench.sql_runs) TO STDOUT' |
            sql -c '\copy bench.sql_runs FROM STDIN'
    fi
    fact release.baseline "${BASELINE_STATUS:-n/a}"
}

# --- the report --------------------------------------------------------------------

duration() {
    local s=$1
    if ((s >= 60)); then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}

record_facts() {
    local cpu cores threads ram os kernel storage virt= settings source
    # From /proc, not lscpu: a chroot (scripts/fresh-root.sh) has no /sys.
    cpu=$(sed -n 's/^model name\s*: *//p' /proc/cpuinfo | sed -n 1p)
    threads=$(awk -F': *' '/^siblings/ { s = $2 } /^cpu cores/ { c = $2 }
                           END { if (s && c) print s / c; else print "?" }' /proc/cpuinfo)
    grep -qw hypervisor /proc/cpuinfo && virt="a virtual machine"
    cores="$(nproc) online CPUs ($threads thread(s) per core${virt:+; $virt})"
    ram=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
    os=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release)
    kernel=$(uname -srm)
    storage=$(df -PT "$WORK" | awk 'NR == 2 { print $2 " on " $1 }')
    if ! command -v git >/dev/null; then
        source="not known here (git is not installed)"
    elif source=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null); then
        [[ -z $(git -C "$REPO" status --porcelain 2>/dev/null) ]] || source+=" with uncommitted changes"
    else
        source="no commit yet (working tree)"
    fi
    fact machine.cpu "$cpu"
    fact machine.cores "$cores"
    fact machine.ram "$ram"
    fact machine.os "$os"
    fact machine.kernel "$kernel"
    fact machine.storage "$storage (the cluster's data directory)"
    fact run.date "$RUN_DATE"
    fact machine.load "$LOAD_AT_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    fact machine.load_at_start "${LOAD_AT_START%% *}"
    fact run.command "$REPRODUCE"
    fact run.quick "$QUICK"
    fact run.source "$source"
    fact run.reps "$SQL_REPS"
    fact sql.many_reps "$MANY_REPS"
    if ((QUICK)); then fact run.mode "a --quick smoke run"; else fact run.mode "a full run"; fi
    fact sql.rows "$SQL_ROWS"
    fact pgbench.seconds "$PGBENCH_SECONDS"
    fact pgbench.reps "$PGBENCH_REPS"
    fact pg.shared_buffers "$SHARED_BUFFERS"
    fact snowflake.status "$SNOWFLAKE_STATUS"
    sql -c "INSERT INTO bench.facts SELECT 'pg.version', version()"
    settings=$(sql -c "SELECT string_agg(format('%s = %s', name, current_setting(name)), ', ' ORDER BY ord)
                         FROM unnest(ARRAY['shared_buffers', 'work_mem', 'fsync', 'synchronous_commit',
                                           'full_page_writes', 'max_wal_size', 'checkpoint_timeout',
                                           'jit', 'max_parallel_workers_per_gather'])
                              WITH ORDINALITY AS s(name, ord)")
    if ((HAVE_SNOWFLAKE)); then
        settings+=", $(sql -c "SELECT string_agg(format('%s = %s', name, setting), ', ' ORDER BY name)
                                 FROM pg_settings WHERE name IN ('snowflake.datacenter_id',
                                      'snowflake.worker_id', 'snowflake.max_clock_backward_wait')")"
        # The generator's own allocation if it has one by that name, else all of
        # snowflake's; the report lists them all.
        sql <<'SQL'
INSERT INTO bench.facts
SELECT 'snowflake.shmem_bytes',
       coalesce(sum(size) FILTER (WHERE name ILIKE '%snowflake%generator%'), sum(size))
  FROM pg_shmem_allocations WHERE name ILIKE '%snowflake%' HAVING count(*) > 0;
INSERT INTO bench.facts
SELECT 'snowflake.shmem', string_agg(format('"%s" %s B', name, size), ', ' ORDER BY name)
  FROM pg_shmem_allocations WHERE name ILIKE '%snowflake%' HAVING count(*) > 0;
SQL
    fi
    fact pg.settings "$settings"
    fact run.items "$ONLY"
    local item
    for item in "${!ITEM_LOAD[@]}"; do fact "load.item$item" "${ITEM_LOAD[$item]}"; done
}

# --- main ------------------------------------------------------------------------

selected() { [[ ,$ONLY, == *,$1,* ]]; }

# The 1-minute load average as an item starts: other work on the machine
# shows there, and the report prints it with the item.
declare -A ITEM_LOAD=()
item_started() { ITEM_LOAD[$1]=$(cut -d' ' -f1 /proc/loadavg); }

main() {
    RUN_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
    LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
    install_packages
    PG_CONFIG=$PG_BINDIR/pg_config
    [[ -x $PG_CONFIG ]] || die "no pg_config in $PG_BINDIR"
    PKGLIBDIR=$($PG_CONFIG --pkglibdir)
    SHAREDIR=$($PG_CONFIG --sharedir)

    WORK=$(mktemp -d /tmp/snowflake-bench.XXXXXX)
    chmod 755 "$WORK"
    install -d -o postgres -g postgres "$WORK/pg"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    selected 1 && build_core_bench
    install_floor
    install_snowflake

    local t=$SECONDS
    if selected 1; then
        item_started 1
        run_core
    fi
    local core_seconds=$((SECONDS - t))

    start_cluster
    setup_database
    selected 1 && load_core_results
    write_count_script
    if selected 2; then
        item_started 2
        run_sql_one
    fi
    if selected 3; then
        item_started 3
        run_sql_many
    fi
    if selected 4; then
        item_started 4
        run_pgbench
    fi
    if selected 5; then
        item_started 5
        run_big
    fi
    if selected 6; then
        item_started 6
        run_release
    fi

    record_facts
    fact run.duration "$(duration "$SECONDS")"
    selected 1 && log "the core benchmark took $(duration "$core_seconds")"
    sql -f "$WORK/pg/report.sql" >"$WORK/report.md"
    cat "$WORK/report.md"
    if [[ -n $OUT ]]; then
        cp "$WORK/report.md" "$OUT"
        log "report written to $OUT"
    fi
}

main
