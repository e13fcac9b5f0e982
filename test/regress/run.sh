#!/usr/bin/env bash
# PostgreSQL's own test suites as snowflake's compatibility test: the
# regression suite (src/test/regress, the installcheck-parallel schedule) and
# the isolation suite (src/test/isolation) run against a server set up as a
# user's is; the layer passes if every test passes, or, where some fail, if
# the same server without snowflake gives every test of that suite the same
# verdict.
#
#   test/regress/run.sh              (scripts/test.sh regress runs it, as root,
#                                     after installing the extension)
#   exit 0: every test passed, or the same verdicts; 3: the suites cannot be had here, the last
#   "regress:" line says why (scripts/test.sh reports the layer skipped);
#   other: a difference, or the suites could not run
#
# Why the comparison and not the expected files alone: the suites come from
# Debian's source package of the installed server (`apt-get source`), and the
# archive does not always carry the source of a security update, so the test
# files may be of another minor than the server; a test that fails for that
# reason fails on both servers alike.
#
# What it does:
# - The source: a deb-src list of its own, naming the repositories apt says
#   serve postgresql-NN (apt-cache madison), with apt's lists and downloads
#   under /var/cache/snowflake/regress/apt/; the machine's apt configuration is
#   not touched. It asks for the installed version's source, else another
#   version the source index lists, newest first; failing those (a mirror
#   whose index has moved on to files it does not have yet), the newest
#   point release of this Debian release that the package's changelog names,
#   from the main archive's pool, its signature checked against Debian's
#   keyring. For a major from another archive than the release's (19, from
#   Debian's experimental archive), whose sources the archive as apt reaches
#   it may not serve (the archive this project's machines reach serves
#   experimental's binary packages only), no source means the layer skips,
#   saying so (exit 3; the
#   suites of an older major are no substitute: 18's against 19rc1 failed
#   two tests in five on both servers and hung in a parallel query).
#   Only src/test/regress and src/test/isolation are kept, with
#   regress.so built from regress.c against the installed server's headers
#   (PGXS), in /var/cache/snowflake/regress/postgresql-NN_VERSION/, reused
#   while that server version is installed. The other libraries the suite
#   loads (autoinc, refint from contrib/spi) are the server's own;
#   pg_regress, pg_isolation_regress and isolationtester are Debian's too.
# - The servers (scripts/cluster.sh, Unix sockets only): `snowflake` and
#   `snowflake_isolation`, with the README's configuration
#   (shared_preload_libraries, datacenter_id, worker_id) and the extension
#   created in each database the suites run in and in `postgres`, where an ID
#   is issued before and after the suites; the two suites run at once, each
#   on its own server: alone, neither keeps the two cores of a CI machine
#   busy (the regression suite has one-test steps, the isolation suite mostly
#   waits on locks and timeouts). Then, only for a suite in which a test
#   failed with snowflake, `plain`, the same server without snowflake, runs
#   it too, and the verdicts must be the same: a test that fails on this
#   machine without snowflake is no finding. (Until 1.6 the plain server ran
#   every suite; where every test passes with snowflake, that run compared
#   nothing, and it was half the layer's CPU.) Where the source is of
#   another minor than the server, the plain server's regression suite runs
#   from the start, beside snowflake's: it will be needed.
# - Never a hang: a run that prints nothing for REGRESS_STALL_SECONDS
#   (default 300) or lasts REGRESS_TIMEOUT_SECONDS (default 1800) is ended,
#   and the layer fails, showing what the server's sessions were waiting for
#   and its log; the servers are stopped (scripts/cluster.sh: immediately if
#   a fast shutdown does not finish in 30 s).
# - Verdicts are pg_regress's own (its output, in the format of 15 and of
#   16 and later). A test whose verdicts differ is named, with the diff from
#   the plain server's output to snowflake's and the failing run's diff
#   against the expected file.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh
STALL_SECONDS=${REGRESS_STALL_SECONDS:-300}
TIMEOUT_SECONDS=${REGRESS_TIMEOUT_SECONDS:-1800}
CACHE=/var/cache/snowflake/regress
PACKAGE=postgresql-$PG_MAJOR
PGXS_DIR=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")

section() { printf '\n=== %s ===\n' "$*"; }
fail() { echo "regress: $*" >&2; exit 1; }
# Exit status 3: the layer cannot run here (scripts/test.sh says it skipped,
# with this line's reason).
skip() { echo "regress: $*" >&2; exit 3; }

SERVER_VERSION=$(dpkg-query -W -f='${Version}' "$PACKAGE" 2>/dev/null) \
    || fail "$PACKAGE is not installed as a Debian package: its source is what the suites come from"
SUITE_DIR=$CACHE/${PACKAGE}_$SERVER_VERSION
CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# --- the test source and regress.so, once per installed server version -----

APT_DIR=$CACHE/apt
APT_OPTIONS=(
    -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
    -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
    -o "Dir::State::Lists=$APT_DIR/lists"
    -o "Dir::Cache=$APT_DIR/cache"
)

# deb-src lines for the repositories that serve the installed package, as
# apt-cache madison names them ("URI SUITE/COMPONENT ARCH Packages").
write_source_list() {
    apt-cache madison "$PACKAGE" | awk -F' [|] ' '
        $3 ~ / Packages$/ {
            split($3, field, " "); split(field[2], where, "/")
            print "deb-src " field[1] " " where[1] " " where[2]
        }' | sort -u >"$APT_DIR/sources.list"
    [ -s "$APT_DIR/sources.list" ] \
        || fail "apt names no repository that serves $PACKAGE (apt-cache madison $PACKAGE); run apt-get update"
}

# Downloads the source of VERSION, as apt's source index lists it, into DIR
# (apt downloads as _apt).
download_indexed() {
    local version=$1 dir=$2
    (cd "$dir" && apt-get "${APT_OPTIONS[@]}" source -qq --download-only "$PACKAGE=$version")
}

# The point releases of the installed package in this Debian release's main
# suite that its changelog names, newest first, none newer than the server.
point_releases() {
    local changelog=/usr/share/doc/$PACKAGE/changelog.Debian.gz version
    [ -r "$changelog" ] || return 0
    zcat "$changelog" | sed -n "s/^$PACKAGE (\([^)]*\)) $CODENAME;.*/\1/p" | while read -r version; do
        dpkg --compare-versions "$version" le "$SERVER_VERSION" && echo "$version"
    done
}

# Downloads the source of VERSION, a point release, from the main archive's
# pool into DIR: the archive keeps it there after its source index has moved
# on to a later version, whose files a mirror may not have yet. No index
# vouches for these files: the .dsc's signature is checked against Debian's
# keyring when it is unpacked, and the files against the .dsc's checksums.
download_from_pool() {
    local version=$1 dir=$2 pool dsc checksum size file
    pool=$(apt-get "${APT_OPTIONS[@]}" source -qq --print-uris "$PACKAGE/$CODENAME" |
        sed -n "s|^'\(.*\)/\([^/_]*\)_[^/]*\.dsc' .*|\1 \2|p")
    [ -n "$pool" ] || return 1
    dsc=${pool#* }_${version#*:}.dsc
    pool=${pool% *}
    /usr/lib/apt/apt-helper download-file "$pool/$dsc" "$dir/$dsc" || return 1
    sed -n '/^Checksums-Sha256:/,/^[^ ]/s/^ //p' "$dir/$dsc" | while read -r checksum size file; do
        /usr/lib/apt/apt-helper download-file "$pool/$file" "$dir/$file" "SHA256:$checksum" || exit 1
    done
}

fetch_source() {
    local download=$SUITE_DIR.download version how tries=() unpack=(dpkg-source)
    mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/sources.list.d"
    write_source_list
    apt-get "${APT_OPTIONS[@]}" update -qq >"$APT_DIR/update.log" 2>&1 \
        || { cat "$APT_DIR/update.log"; fail "apt-get update of the source lists failed"; }
    # What apt's source index lists (the installed version first, then the
    # others, newest first), then the point releases from the pool.
    for version in "$SERVER_VERSION" $(apt-cache "${APT_OPTIONS[@]}" showsrc "$PACKAGE" |
        sed -n 's/^Version: //p' | grep -vxF "$SERVER_VERSION" | sort -rVu); do
        tries+=("indexed $version")
    done
    for version in $(point_releases); do tries+=("from_pool $version"); done
    rm -f "$download.log"
    for how in "${tries[@]}"; do
        read -r how version <<<"$how"
        rm -rf "$download"
        mkdir -p "$download"
        chown _apt "$download"
        echo "--- $how $version ---" >>"$download.log"
        if "download_$how" "$version" "$download" >>"$download.log" 2>&1; then
            SOURCE_VERSION=$version
            [ "$how" = from_pool ] && unpack+=(--require-valid-signature)
            break
        fi
    done
    if [ -z "${SOURCE_VERSION:-}" ] && [ "$PG_MAJOR" != "$(postgresql_major_of_release 2>/dev/null)" ]; then
        # A major from another archive than the release's (19 from
        # experimental): the archive, as apt reaches it here, may serve its
        # binary packages and not its sources.
        sed -n 's/^--- \(.*\) ---$/regress: tried: \1/p' "$download.log" >&2
        grep -m 1 '^E: ' "$download.log" | sed 's/^/regress: first error: /' >&2
        skip "no source of $PACKAGE, whose suites the layer runs, could be downloaded from" \
            "$(cut -d' ' -f2- "$APT_DIR/sources.list" | paste -sd,) (above), so PostgreSQL's suites" \
            "did not run on PostgreSQL $PG_MAJOR here; they run on the majors of Debian's releases."
    fi
    [ -n "${SOURCE_VERSION:-}" ] || {
        cat "$download.log"
        fail "no source of $PACKAGE could be downloaded from: $(cut -d' ' -f2- "$APT_DIR/sources.list" | paste -sd,)"
    }
    echo "source: $PACKAGE $SOURCE_VERSION (server $SERVER_VERSION)"
    (cd "$download" && "${unpack[@]}" -x ./*.dsc tree) >"$download.log" 2>&1 \
        || { cat "$download.log"; fail "dpkg-source could not unpack the source of $PACKAGE $SOURCE_VERSION"; }
    rm -rf "$SUITE_DIR"
    mkdir -p "$SUITE_DIR/src/test" "$SUITE_DIR/lib"
    mv "$download/tree/src/test/regress" "$download/tree/src/test/isolation" "$SUITE_DIR/src/test/"
    rm -rf "$download" "$download.log"
}

# regress.so from the suite's regress.c, PGXS against the installed headers;
# the other libraries the suite loads (by `:libdir '/NAME'`) are the server's.
build_libraries() {
    local lib=$SUITE_DIR/lib name
    cp "$SUITE_DIR/src/test/regress/regress.c" "$lib/"
    printf '%s\n' 'MODULES = regress' 'PGXS := $(shell $(PG_CONFIG) --pgxs)' 'include $(PGXS)' >"$lib/Makefile"
    make -s -C "$lib" PG_CONFIG="$PG_CONFIG" with_llvm=no >"$lib/build.log" 2>&1 \
        || { cat "$lib/build.log"; fail "regress.so did not build against PostgreSQL $PG_MAJOR's headers"; }
    for name in $(grep -rhoE ":libdir '/[a-z_0-9]+'" "$SUITE_DIR/src/test/regress/sql" |
        sed "s|.*'/||; s|'||" | sort -u); do
        [ "$name" = regress ] && continue
        [ -f "$("$PG_CONFIG" --pkglibdir)/$name.so" ] \
            || fail "the regression suite loads $name.so, which $PACKAGE does not install"
        ln -sf "$("$PG_CONFIG" --pkglibdir)/$name.so" "$lib/$name.so"
    done
}

prepare_suites() {
    mkdir -p "$CACHE"
    exec 8>"$CACHE/lock"
    flock 8  # one fetch or build at a time
    if [ -f "$SUITE_DIR/source-version" ]; then
        echo "source: $PACKAGE $(cat "$SUITE_DIR/source-version") (server $SERVER_VERSION), from $SUITE_DIR"
    else
        fetch_source
        build_libraries
        echo "$SOURCE_VERSION" >"$SUITE_DIR/source-version"  # last: marks it complete
    fi
    flock -u 8
}

# --- the runs ---------------------------------------------------------------

# shellcheck source=scripts/cluster.sh
source scripts/cluster.sh
export PATH="$PG_BIN:$PATH"
# The suites' output, kept when the layer fails; the servers write in it too.
OUTPUT=$(mktemp -d /tmp/snowflake-regress.XXXXXX)
chown postgres: "$OUTPUT"

# The EXIT trap: the servers stopped, the output kept if the layer failed.
stop_servers() {
    local status=$?
    clusters_cleanup
    if [ $status -eq 0 ]; then
        rm -rf "$OUTPUT"
    else
        echo "regress: the suites' output is kept in $OUTPUT" >&2
    fi
}

# Runs COMMAND as postgres in its own process group, its output in LOG;
# ends it if it prints nothing for STALL_SECONDS or runs TIMEOUT_SECONDS.
# Returns the command's status, or 124 when it was ended.
run_bounded() {
    local log=$1 pid size last_size=-1 quiet=0 started=$SECONDS
    shift
    # Not a process group leader (no job control here), so setsid does not
    # fork: $! leads the new group. From /: the caller's directory (often
    # /root) is not the postgres user's to enter.
    setsid runuser -u postgres -- env --chdir=/ "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 5
        size=$(stat -c %s "$log")
        if [ "$size" != "$last_size" ]; then
            last_size=$size quiet=0
        else
            quiet=$((quiet + 5))
        fi
        if [ $quiet -ge "$STALL_SECONDS" ] || [ $((SECONDS - started)) -ge "$TIMEOUT_SECONDS" ]; then
            kill -TERM -- "-$pid" 2>/dev/null || true
            sleep 5
            kill -KILL -- "-$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            return 124
        fi
    done
    wait "$pid"
}

# What a stalled server's sessions wait for, and its log's last lines.
show_stall() {
    local name=$1
    echo "--- sessions of the server '$name' ---"
    timeout 30 "$PG_BIN/psql" -X -h "$SCRATCH/$name" -p "${CLUSTER_PORT[$name]}" -U postgres -d postgres -c "
        SELECT pid, backend_type, state, wait_event_type, wait_event, left(query, 60) AS query
        FROM pg_stat_activity WHERE pid <> pg_backend_pid() ORDER BY pid" 2>&1 || true
    cluster_log_tail "$name"
}

# pg_regress's verdicts from its output, one "test verdict" a line: the
# format of 15 ("test x ... ok", "     x ... FAILED") and of 16 and later
# ("ok 3 + x", "not ok 4 - x", "# SKIP").
verdicts() {
    sed -nE \
        -e 's/^(test +| +)([^ ]+) +\.\.\. +(ok|FAILED|failed \(ignored\)).*/\2 \3/p' \
        -e 's/^(ok|not ok) +[0-9]+ +[-+] +([^ ]+) .*# SKIP.*/\2 skipped/p; t' \
        -e 's/^(ok|not ok) +[0-9]+ +[-+] +([^ ]+).*/\2 \1/p' "$1" |
        sed -E 's/ not ok$/ FAILED/; s/ failed \(ignored\)$/ FAILED/' | sort
}

# Runs SUITE (regress or isolation) against the server NAME (snowflake or
# plain), on SERVER (default NAME); its output and verdicts are kept in
# $OUTPUT/NAME/SUITE/.
run_suite() {
    local name=$1 suite=$2 server=${3:-$1} out=$OUTPUT/$1/$2 command=() status=0
    as_postgres mkdir -p "$out"
    case $suite in
        regress)
            command=(
                "$PGXS_DIR/test/regress/pg_regress"
                --inputdir="$SUITE_DIR/src/test/regress" --dlpath="$SUITE_DIR/lib"
                --schedule="$SUITE_DIR/src/test/regress/parallel_schedule" --max-concurrent-tests=20
            )
            ;;
        isolation)
            command=(
                "$PGXS_DIR/test/isolation/pg_isolation_regress"
                --inputdir="$SUITE_DIR/src/test/isolation"
                --schedule="$SUITE_DIR/src/test/isolation/isolation_schedule"
            )
            ;;
    esac
    [ "$name" = snowflake ] && command+=(--load-extension=snowflake)
    local started=$SECONDS
    run_bounded "$out/output.txt" env $(cluster_env "$server") "${command[@]}" \
        --outputdir="$out" --bindir="$PG_BIN" --no-locale || status=$?
    if [ $status -eq 124 ]; then
        echo "regress: the $suite suite against the server '$server' made no progress for ${STALL_SECONDS} s" \
            "or ran past ${TIMEOUT_SECONDS} s; it was ended. Its last lines:" >&2
        tail -n 15 "$out/output.txt" >&2
        show_stall "$server" >&2
        return 1
    fi
    # pg_regress: 0 all passed, 1 some failed, 2 it could not run the suite.
    if [ $status -gt 1 ] || ! grep -qE 'tests (passed|failed)|All [0-9]+ tests passed|^# (All|[0-9]+ of)' "$out/output.txt"; then
        cat "$out/output.txt" >&2
        echo "regress: the $suite suite could not run against the server '$server' (status $status)" >&2
        return 1
    fi
    verdicts "$out/output.txt" >"$out/verdicts"
    printf '%-9s %-10s %4d tests, %3d failed, %4d s\n' "$suite" "$name" \
        "$(wc -l <"$out/verdicts")" "$(grep -c ' FAILED$' "$out/verdicts" || true)" $((SECONDS - started))
}

# Fails, naming each test and showing its diffs, unless both servers gave
# every test of SUITE the same verdict.
compare_suite() {
    local suite=$1 plain=$OUTPUT/plain/$1 snowflake=$OUTPUT/snowflake/$1 test diffs
    if cmp -s "$plain/verdicts" "$snowflake/verdicts"; then
        echo "$suite: the same verdicts with and without snowflake"
        return 0
    fi
    echo "regress: $suite: the verdicts differ (- without snowflake, + with it):" >&2
    diff "$plain/verdicts" "$snowflake/verdicts" | grep '^[<>]' | sed 's/^</-/; s/^>/+/' >&2 || true
    for test in $(diff "$plain/verdicts" "$snowflake/verdicts" | sed -n 's/^[<>] \([^ ]*\) .*/\1/p' | sort -u); do
        echo "--- $test: its output without snowflake -> with snowflake ---" >&2
        diff -u "$plain/results/$test.out" "$snowflake/results/$test.out" 2>&1 | head -n 80 >&2 || true
        echo "--- $test: the failing run's diff against the expected output ---" >&2
        for diffs in "$plain/regression.diffs" "$snowflake/regression.diffs"; do
            [ -f "$diffs" ] && awk -v name="/$test.out" '/^diff / { show = (index($0, name) > 0) } show' "$diffs"
        done | head -n 80 >&2 || true
    done
    return 1
}

issue_id() { cluster_psql snowflake -d postgres -Atq -c "SELECT snowflake_nextval()"; }

main() {
    section "PostgreSQL's regression and isolation suites with snowflake (PostgreSQL $PG_MAJOR)"
    local started=$SECONDS
    prepare_suites
    echo "prepared in $((SECONDS - started)) s"
    trap stop_servers EXIT
    # Two servers with snowflake, one per suite, so that the suites run side
    # by side (neither keeps two cores busy alone: see the header) without
    # meeting in one server.
    cluster_start snowflake 54410 "shared_preload_libraries = 'snowflake'" \
        "snowflake.datacenter_id = 3" "snowflake.worker_id = 7"
    cluster_start snowflake_isolation 54412 "shared_preload_libraries = 'snowflake'" \
        "snowflake.datacenter_id = 3" "snowflake.worker_id = 8"
    local server
    for server in snowflake snowflake_isolation; do
        cluster_psql "$server" -d postgres -q -c "CREATE EXTENSION snowflake"
    done
    local first_id last_id suite status=0 pid pids=() plain=()
    # The suites' source of another minor than the server's (the archive had
    # no source of the installed one): tests whose output that minor changed
    # fail on any server, so the plain server's run of the regression suite
    # will be needed (bookworm's and trixie's roots: 9 and 11 of its tests
    # failed on both servers, none of the isolation suite's), and it runs
    # beside snowflake's rather than after them.
    if [ "$(cat "$SUITE_DIR/source-version")" != "$SERVER_VERSION" ]; then
        cluster_start plain 54411
        run_suite plain regress &
        plain=(regress "$!")
    fi
    first_id=$(issue_id)
    run_suite snowflake regress &
    pids+=($!)
    run_suite snowflake isolation snowflake_isolation &
    pids+=($!)
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    [ $status -eq 0 ] || return 1
    last_id=$(issue_id)
    [ "$last_id" -gt "$first_id" ] \
        || fail "after the suites snowflake_nextval() gave $last_id, not above $first_id issued before them"
    # Without snowflake, only the suites with a test that failed with it:
    # whether the same tests fail on a plain server (this machine's, not
    # snowflake's) is then the verdict. Where every test passed there is
    # nothing to compare, and a run without snowflake would prove nothing.
    local failing=()
    pids=()
    [ ${#plain[@]} -eq 0 ] || pids+=("${plain[1]}")
    for suite in regress isolation; do
        if ! grep -q ' FAILED$' "$OUTPUT/snowflake/$suite/verdicts"; then
            echo "$suite: every test passed with snowflake"
            continue
        fi
        failing+=("$suite")
        [ "${plain[0]:-}" != "$suite" ] || continue
        [ -n "${CLUSTER_PORT[plain]:-}" ] || cluster_start plain 54411
        run_suite plain "$suite" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    [ $status -eq 0 ] || return 1
    for suite in "${failing[@]}"; do
        compare_suite "$suite" || status=1
    done
    [ $status -eq 0 ] || return 1
    echo "regress: passed in $((SECONDS - started)) s"
}

main
