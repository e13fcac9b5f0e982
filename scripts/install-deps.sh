#!/usr/bin/env bash
# Installs the Debian packages snowflake needs to build, run and test it
# (CONTRIBUTING.md, "The two scripts and what they install"), for the
# PostgreSQL major that scripts/postgresql.sh selects (this Debian release's,
# or PG_MAJOR=NN). Idempotent: installs only what is missing, after one
# apt-get update. PostgreSQL 19, which no Debian release has yet, comes from
# Debian's experimental archive, on forky and sid (it is added to the apt
# sources, saying so).
#
#   scripts/install-deps.sh            everything (build, every test layer but
#                                      clients and monitoring, benchmarks; on
#                                      PostgreSQL 16 to 18 also what building
#                                      Citus for the citus test layer needs)
#   scripts/install-deps.sh --layers unit tap ...
#                                      what the tour needs and what those
#                                      layers of scripts/test.sh need (the
#                                      lists below, one a layer): what
#                                      scripts/test.sh installs
#   scripts/install-deps.sh --runtime  only what the five-minute tour needs
#   scripts/install-deps.sh --print ...
#                                      the packages the rest names, one a line;
#                                      installs nothing
#   scripts/install-deps.sh --build    only what building snowflake for an
#                                      installed PostgreSQL needs (its headers,
#                                      a compiler, the clang it was built with),
#                                      never a server: scripts/install.sh, with
#                                      PG_CONFIG naming that PostgreSQL; for a
#                                      major the tests do not run on (16), the
#                                      clang its headers name
#   scripts/install-deps.sh --packaging
#                                      what the tour needs and what building the
#                                      Debian packages needs (scripts/package.sh)
#   scripts/install-deps.sh --clients  what the tour needs and the clients layer's
#                                      languages, drivers and ORMs (test/clients/)
#   scripts/install-deps.sh --monitoring
#                                      what the tour needs and the monitoring
#                                      layer's exporter and promtool
#   scripts/install-deps.sh --sources  nothing: only makes apt's sources serve
#                                      postgresql-NN (adding experimental for 19),
#                                      as a machine that installs a package built
#                                      for it needs (test/package/installed.sh)
#   scripts/install-deps.sh --previous-major
#                                      what the tour needs, for the supported
#                                      major before this one, from the Debian
#                                      release that serves it (the upgrade
#                                      layer of scripts/test.sh: pg_upgrade
#                                      from it); see "Another release's major"
#
# Every package is named here: installs run with --no-install-recommends, so a
# Recommends (pg_prove is only one of postgresql-NN-pgtap) is not an install
# step, and neither is anything installed on this machine by hand.
set -Eeuo pipefail
# A command that ends the script (set -e) says which, even one whose own
# output said nothing; said by the script's own shell only, as a subshell's
# (a process substitution's) failure is the script's only if its command
# fails.
trap 'err_status=$?; [ "$BASHPID" != "$$" ] || echo "scripts/install-deps.sh: line $LINENO: $BASH_COMMAND failed (status $err_status)" >&2' ERR
cd "$(dirname "$0")/.."
# --print first: print the packages the rest of the words name, one a line,
# and install nothing (test/install_deps.pl reads the layers' lists so).
print_only=false
if [ "${1:-}" = --print ]; then
    print_only=true
    shift
fi
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh

# The clang and LLVM that Debian's build of each major was configured with
# (CLANG and LLVM_CONFIG in its Makefile.global): PGXS compiles LLVM bitcode
# for the JIT with exactly that clang. And, for the clients layer, the pgx
# (Go's PostgreSQL driver) its Debian release packages, and its Rust crates
# beyond tokio-postgres (sqlx and Diesel: trixie on).
rust_orms=(librust-sqlx-dev librust-diesel-dev)
# The clang an installed major's PGXS names (CLANG in its Makefile.global),
# else the one its headers' package depends on: how --build knows a major
# that the table does not name.
clang_of_installed_major() {
    local makefile_global version
    makefile_global=$(dirname "$("$PG_CONFIG" --pgxs 2>/dev/null)")/../Makefile.global
    version=$(sed -n 's|^CLANG *= *.*clang-\([0-9][0-9]*\)$|\1|p' "$makefile_global" 2>/dev/null)
    [ -n "$version" ] || version=$(apt-cache depends "postgresql-server-dev-$PG_MAJOR" 2>/dev/null |
        sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | sed -n 1p)
    echo "$version"
}
case $PG_MAJOR in
    15) llvm=14 pgx=(golang-github-jackc-pgx-v4-dev) rust_orms=() ;;  # bookworm
    17) llvm=19 pgx=(golang-github-jackc-pgx-v4-dev) ;;  # trixie (pgx v5 came after it)
    18) llvm=21 pgx=(golang-github-jackc-pgx-v5-dev) ;;  # forky, sid
    19) llvm=21 pgx=(golang-github-jackc-pgx-v5-dev) ;;  # experimental, on forky and sid
    *)
        if [ "${1:-}" = --build ] && [[ " $POSTGRESQL_SUPPORTED_MAJORS " == *" $PG_MAJOR "* ]] &&
            llvm=$(clang_of_installed_major) && [ -n "$llvm" ]; then
            pgx=()
        else
            echo "scripts/install-deps.sh knows no clang for PostgreSQL $PG_MAJOR (15, 17, 18 and 19 are supported)" >&2
            exit 1
        fi
        ;;
esac

# --- another release's major ------------------------------------------------
# The upgrade layer (scripts/test.sh upgrade) upgrades from the supported major
# before this one (scripts/postgresql.sh: 15 before 17, 17 before 18, 18
# before 19), which only the Debian release before this one serves: 15 on
# trixie comes from bookworm's archive, 17 on forky and sid from trixie's
# (each with its security updates). That archive is added to apt's sources,
# saying so, at a priority below this release's own (100): apt takes from it
# only what this release does not have (that major's server, headers and
# client, and the libraries and clang it was built with: libicu72, libllvm14
# and clang-14 for bookworm's 15), never a package this release has. Then
# this script runs again for that major.
OLDER_SOURCES_DIR=/etc/apt/sources.list.d
OLDER_PREFERENCES_DIR=/etc/apt/preferences.d

add_release_archive() {
    local release=$1 codename mirror security sources preferences
    sources=$OLDER_SOURCES_DIR/snowflake-$release.list
    preferences=$OLDER_PREFERENCES_DIR/snowflake-$release
    [ -f "$sources" ] && [ -f "$preferences" ] && return 0
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
    # The first line with `sed -n 1p`, which reads to the end, not `head -n 1`,
    # which leaves after it: apt-get writes line by line, its next write then
    # got SIGPIPE, and under pipefail this script ended there without a word
    # (a CI run's upgrade layer, on a loaded machine).
    # shellcheck disable=SC2016  # apt's format, not the shell's
    mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Origin: Debian' "Codename: $codename" | sed -n 1p)
    # shellcheck disable=SC2016
    security=$(apt-get indextargets --format '$(REPO_URI)' "Codename: $codename-security" | sed -n 1p)
    mirror=${mirror:-http://deb.debian.org/debian/}
    security=${security:-http://deb.debian.org/debian-security/}
    echo "PostgreSQL $PG_MAJOR is not in $codename: adding Debian's $release archive ($mirror, and"
    echo "$security for its security updates) to apt's sources ($sources), below $codename's own"
    echo "packages ($preferences): apt takes from it only what $codename does not have"
    printf 'deb %s %s main\n' "$mirror" "$release" "$security" "$release-security" |
        "${as_root[@]}" tee "$sources" >/dev/null
    printf '%s\n' "# scripts/install-deps.sh: PostgreSQL $PG_MAJOR from $release; $codename's own packages first" \
        "Package: *" "Pin: release n=$release" "Pin-Priority: 100" "" \
        "Package: *" "Pin: release n=$release-security" "Pin-Priority: 100" |
        "${as_root[@]}" tee "$preferences" >/dev/null
    "${as_root[@]}" apt-get update -qq
}

runtime=(
    "postgresql-$PG_MAJOR"            # the server, psql, initdb, pg_ctl, pgbench
    "postgresql-server-dev-$PG_MAJOR" # PGXS, headers, pg_regress, PostgreSQL::Test::Cluster
    libpq-dev                         # libpq-fe.h and -lpq (the registry's client)
    libssl-dev                        # openssl/evp.h and -lcrypto (AES for public IDs' FF1)
    g++ make
    "clang-$llvm" "llvm-$llvm-dev"    # the JIT bitcode
)
# What each layer of scripts/test.sh needs beyond the runtime set, by the
# layer's name (CONTRIBUTING.md, "Tests"): `--layers unit tap` installs the
# runtime set and these layers' packages, which scripts/test.sh runs for the
# layers it was asked for. A package that several layers need is named in
# each; it is installed once.
unit=(
    perl                                  # prove: test/package.pl, test/install_deps.pl, test/docs.pl
    cmake                                 # cmake and ctest (GoogleTest suite)
    googletest libgtest-dev
    clang-format                          # make format-check
    python3                               # test/unit/ff1_reference.py
    python3-cryptography                  # test/unit/ff1_reference.py: FF1's radix-2 vectors from an independent transcription
)
model=(
    spin                                  # test/model: the SPIN model checker (pan is compiled with gcc)
)
simulation=(
    cmake                                 # test/simulation: the simulator's build
)
fuzz=(
    "libclang-rt-$llvm-dev"               # test/fuzz: libFuzzer and the ASan/UBSan runtimes of clang-$llvm
    python3                               # test/fuzz: the layout arithmetic's reference (arbitrary-precision integers)
)
sql=(
    "postgresql-$PG_MAJOR-pgtap"          # pgTAP in the server
    "postgresql-$PG_MAJOR-partman"        # pg_partman: time partitions keyed by the ID (test/pgtap)
    libtap-parser-sourcehandler-pgtap-perl # pg_prove
)
sqlsmith=(
    sqlsmith                              # test/sqlsmith: random queries against a server that preloads snowflake
    python3                               # test/sqlsmith: the typed random calls
)
tap=(
    perl                                  # prove, Test::More, JSON::PP
    libipc-run-perl                       # PostgreSQL::Test::Cluster
    libfaketime                           # the cluster tests' clock steps
    pgbackrest                            # test/t/064_pgbackrest.pl: backups and point-in-time restores with a real repository
)
ha=(
    perl libipc-run-perl libfaketime      # test/ha: prove, IPC::Run, the clock steps of the drills
    iproute2                              # test/ha: ip netns, veth, bridge (the partition drills)
    pgbouncer                             # test/ha: the transaction pooling drill
    patroni python3-etcd                  # test/ha: the Patroni drills (python3-etcd: its etcd client)
    etcd-server etcd-client               # test/ha: etcd, the Patroni drills' DCS, and etcdctl
)
regress=(
    perl                                  # test/regress: prove, for PostgreSQL's own TAP-driven steps
    dpkg-dev                              # test/regress: dpkg-source, which apt-get source unpacks with
    debian-keyring                        # test/regress: the signatures of sources no apt index lists
)
# The sanitize layer runs the sql layer and cluster tests; the mutants layer
# runs unit, pg_regress and cluster tests (python3: test/mutants/run.py);
# the campaign runs real clusters as the cluster tests do (python3: its
# checker); the upgrade layer runs test/t/063 and test/upgrade, whose
# previous major --previous-major installs.
sanitize=("${sql[@]}" "${tap[@]}")
mutants=("${unit[@]}" "${sql[@]}" "${tap[@]}")
campaign=("${tap[@]}")
upgrade=("${tap[@]}")
# The benchmarks (test/bench/run.sh, which no layer runs, installs them itself
# too, with the runtime set).
bench=(
    libbenchmark-dev jq                   # test/bench
)

# The citus test layer builds Citus (a test dependency only, never linked or
# shipped) from the vendored source (scripts/citus.sh) when it is not
# installed. What that build needs beyond the server headers; Citus 14
# supports PostgreSQL 16 to 18, so on 15 and 19 it is not installed.
citus_build=(
    libcurl4-openssl-dev              # configure requires it (and PostgreSQL 18's headers make Citus include curl/curl.h)
    libicu-dev                        # unicode/ucol.h (configure passes without it; the build fails)
    liblz4-dev                        # columnar compression (configure requires it)
    libzstd-dev                       # columnar compression (configure requires it)
    libkrb5-dev libssl-dev            # gssapi/gssapi.h, openssl/ssl.h: PostgreSQL's libpq-be.h includes them
)
citus=("${tap[@]}")
if [ "$PG_MAJOR" -ge 16 ] && [ "$PG_MAJOR" -le 18 ]; then citus+=("${citus_build[@]}"); fi

packaging=(
    postgresql-server-dev-all         # pg_buildext, dh --with pgxs_loop
    debhelper dpkg-dev build-essential # dpkg-buildpackage (it checks build-essential)
    lintian
    git                               # the clean clone the package is built from
)

# The clients layer (scripts/test.sh clients, test/clients/, doc/clients.md):
# the drivers and ORMs applications use, each from Debian, as a user of that
# release gets them. Only that layer installs these (a JDK, Ruby, Go, Node
# and PHP are large); its npm packages come from test/clients/node/package-lock.json.
clients=(
    iproute2                                # ip: the loopback of the layer's network namespace
    python3 python3-psycopg python3-psycopg2
    python3-sqlalchemy python3-django
    default-jdk-headless libpostgresql-jdbc-java
    libhibernate3-java libjavassist-java    # Hibernate ORM and its bytecode provider (a Recommends)
    ruby ruby-activerecord ruby-pg ruby-minitest
    golang-go "${pgx[@]}"                   # pgx: v4 on bookworm, v5 where Debian has it
    nodejs npm
    php-cli php-pgsql                       # PHP and PDO's pgsql driver
    php-illuminate-database                 # Laravel's Eloquent and schema builder, without the framework
    php-doctrine-dbal php-doctrine-orm
    libdbd-pg-perl                          # Perl's DBI driver
    libpqxx-dev                             # C++ (g++ is in the runtime set)
    cargo librust-tokio-postgres-dev        # Rust, built offline from Debian's crate registry
    librust-tokio-dev librust-serde-dev librust-serde-derive-dev librust-serde-json-dev
    "${rust_orms[@]}"                       # sqlx, Diesel: trixie on
)

# The monitoring layer (scripts/test.sh monitoring, test/monitoring/): the
# exporter contrib/monitoring/queries.yaml is written for, and promtool (in
# Debian's prometheus package) for the alert rules.
monitoring=(
    iproute2                                # ip: the loopback of the layer's network namespace
    prometheus-postgres-exporter
    prometheus                              # promtool
)

# What building for an installed server needs: the runtime set but the server.
build=("${runtime[@]:1}")

# The layers of scripts/test.sh (its ALL_LAYERS; test/docs.pl checks that
# each has a list here). Without an option: every one of them but the
# clients and monitoring layers, and the benchmarks.
LAYERS=(unit model simulation fuzz sql sqlsmith sanitize tap mutants campaign ha regress citus clients monitoring upgrade)
packages=("${runtime[@]}")
case ${1:-} in
    --runtime | --sources | --previous-major) ;;
    --build) packages=("${build[@]}") ;;
    --packaging) packages+=("${packaging[@]}") ;;
    --clients) packages+=("${clients[@]}") ;;
    --monitoring) packages+=("${monitoring[@]}") ;;
    --layers)
        shift
        for layer in "$@"; do
            if [[ " ${LAYERS[*]} " != *" $layer "* ]]; then
                echo "scripts/install-deps.sh: no layer '$layer' (${LAYERS[*]})" >&2
                exit 2
            fi
            list="$layer[@]"
            packages+=("${!list}")
        done
        ;;
    '')
        for layer in "${LAYERS[@]}"; do
            [ "$layer" = clients ] || [ "$layer" = monitoring ] || { list="$layer[@]"; packages+=("${!list}"); }
        done
        packages+=("${bench[@]}")
        ;;
    *)
        echo "scripts/install-deps.sh: unknown option '$1'" >&2
        exit 2
        ;;
esac
# Each package once, in the order first named.
declare -A named=()
listed=("${packages[@]}")
packages=()
for package in "${listed[@]}"; do
    [ -n "${named[$package]:-}" ] || packages+=("$package")
    named[$package]=1
done
if $print_only; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

# --- a major from Debian's experimental archive -----------------------------
# PostgreSQL 19 is in no Debian release yet; Debian builds it in its
# experimental archive, against testing and unstable (forky, sid), whose
# libraries it needs. On those, the archive is added to apt's sources unless
# they name it already, and preferred for that major's source package only
# (the server, client, headers, and the libpq 19 they need); apt takes
# nothing else from it. The preference is needed whoever added the archive:
# at experimental's default priority (1) apt would install postgresql-19
# from it (no other release has one) but keep this release's libpq-dev,
# which postgresql-server-dev-19 refuses ("Depends libpq-dev (>= 19~~)").
experimental_majors=(19)
EXPERIMENTAL_SOURCES=/etc/apt/sources.list.d/snowflake-experimental.list
EXPERIMENTAL_PREFERENCES=/etc/apt/preferences.d/snowflake-experimental
from_experimental=false
[[ " ${experimental_majors[*]} " == *" $PG_MAJOR "* ]] && from_experimental=true

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)

if [ "${1:-}" = --previous-major ]; then
    if ! read -r previous release < <(postgresql_previous_major); then
        echo "PostgreSQL $PG_MAJOR is the first supported major: there is none before it." >&2
        exit 3
    fi
    if ! apt-cache show "postgresql-$previous" >/dev/null 2>&1; then
        "${as_root[@]}" apt-get update -qq
        apt-cache show "postgresql-$previous" >/dev/null 2>&1 || PG_MAJOR=$previous add_release_archive "$release"
    fi
    exec env PG_MAJOR="$previous" PG_CONFIG= "$0" --runtime
fi

add_experimental_archive() {
    local codename=$1 mirror
    case $codename in
        forky | sid) ;;
        *)
            echo "PostgreSQL $PG_MAJOR comes from Debian's experimental archive, which is built for forky and sid" >&2
            echo "only; this machine is $codename. Run it in a forky root:" >&2
            echo "  scripts/fresh-root.sh forky -- 'PG_MAJOR=$PG_MAJOR scripts/test.sh'" >&2
            echo "or unset PG_MAJOR to use this release's major." >&2
            return 1
            ;;
    esac
    if [ ! -f "$EXPERIMENTAL_SOURCES" ]; then
        # shellcheck disable=SC2016  # apt's format, not the shell's
        mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Origin: Debian' "Codename: $codename" | sed -n 1p)
        mirror=${mirror:-http://deb.debian.org/debian/}
        echo "PostgreSQL $PG_MAJOR is not in $codename: adding Debian's experimental archive ($mirror)"
        echo "to apt's sources ($EXPERIMENTAL_SOURCES)"
        echo "deb $mirror experimental main" | "${as_root[@]}" tee "$EXPERIMENTAL_SOURCES" >/dev/null
        "${as_root[@]}" apt-get update -qq
    fi
    prefer_experimental
}

# Prefers experimental for postgresql-NN's source package (the preferences
# file above), unless the file says so already; apt reads preferences on
# each run, so no update is needed after.
prefer_experimental() {
    local preferences
    preferences=$(printf '%s\n' "# scripts/install-deps.sh: PostgreSQL $PG_MAJOR from experimental, and nothing else" \
        "Package: src:postgresql-$PG_MAJOR" "Pin: release a=experimental" "Pin-Priority: 500")
    [ "$(cat "$EXPERIMENTAL_PREFERENCES" 2>/dev/null)" = "$preferences" ] && return 0
    echo "Preferring Debian's experimental archive for postgresql-$PG_MAJOR's packages only"
    echo "($EXPERIMENTAL_PREFERENCES)"
    "${as_root[@]}" mkdir -p "$(dirname "$EXPERIMENTAL_PREFERENCES")"
    printf '%s\n' "$preferences" | "${as_root[@]}" tee "$EXPERIMENTAL_PREFERENCES" >/dev/null
}

if [ "${1:-}" = --sources ]; then
    if ! apt-cache show "postgresql-$PG_MAJOR" >/dev/null 2>&1; then
        "${as_root[@]}" apt-get update -qq
        if ! apt-cache show "postgresql-$PG_MAJOR" >/dev/null 2>&1 && $from_experimental; then
            add_experimental_archive "$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")" || exit 1
        fi
    fi
    # Experimental named by apt's sources already (by the user, as Debian's
    # instructions for 19 do): only the preference is missing.
    if $from_experimental && apt-cache show "postgresql-$PG_MAJOR" >/dev/null 2>&1; then
        prefer_experimental
    fi
    exit 0
fi

# Debian builds the test extensions postgresql-NN-pgtap and
# postgresql-NN-partman for its releases' majors only. Both are SQL alone:
# pgTAP's build adapts its SQL only for majors before 9.5, and pg_partman's
# one library is an optional background worker (pg_partman_bgw, for
# shared_preload_libraries) that the tests do not load. So for a major from
# experimental their extension files (the control file and the scripts) are
# those of this release's package, downloaded, not installed. Each package's
# suffix, and the name of its extension's files:
declare -A sql_only_extensions=([pgtap]=pgtap [partman]=pg_partman)
extension_dir=/usr/share/postgresql/$PG_MAJOR/extension
copy_of_release=()  # the suffixes whose files are to be copied
if $from_experimental; then
    for i in "${!packages[@]}"; do
        suffix=${packages[i]#postgresql-"$PG_MAJOR"-}
        [ "$suffix" != "${packages[i]}" ] && [ -n "${sql_only_extensions[$suffix]:-}" ] || continue
        unset 'packages[i]'
        [ -f "$extension_dir/${sql_only_extensions[$suffix]}.control" ] || copy_of_release+=("$suffix")
    done
fi

copy_extension_of_release() {
    local suffix=$1 release_major work
    release_major=$(postgresql_major_of_release)
    echo "${sql_only_extensions[$suffix]} for PostgreSQL $PG_MAJOR: the extension files of postgresql-$release_major-$suffix"
    work=$(mktemp -d)
    chown _apt "$work" 2>/dev/null || true # apt-get download writes as _apt
    (cd "$work" && "${as_root[@]}" apt-get download -qq "postgresql-$release_major-$suffix")
    dpkg-deb -x "$work"/postgresql-"$release_major"-"$suffix"_*.deb "$work/package"
    "${as_root[@]}" cp "$work/package/usr/share/postgresql/$release_major/extension/${sql_only_extensions[$suffix]}"[.-]* \
        "$extension_dir/"
    rm -rf "$work"
}

# What is installed, and what installed packages provide (a nodejs from
# elsewhere that brings its own npm, for one): a package either names is there.
declare -A present=()
while read -r name; do
    present[$name]=1
done < <(dpkg-query -W -f='${db:Status-Abbrev}|${Package}, ${Provides}\n' 2>/dev/null |
    sed -n 's/^ii *|//p' | tr ',' '\n' | sed 's/ *(.*//; s/^ *//' | grep -v '^$')

missing=()
for package in "${packages[@]}"; do
    [ -n "${present[$package]:-}" ] || missing+=("$package")
done

unserved() {
    local package
    for package in "$@"; do
        apt-cache show "$package" >/dev/null 2>&1 || echo "$package"
    done
}

# --- what is installed from an archive apt takes nothing from by itself ------
# PostgreSQL 19 installed as Debian's wiki says (experimental in apt's
# sources, `apt-get install -t experimental postgresql-19`) brings
# experimental's versions of what it pulls in: libc6 among them, when
# experimental's is newer than this release's. A package tied to the version
# of an installed library (libc6-dev to libc6; g++ and clang bring it) then
# cannot come from this release: apt refuses ("libc6-dev ... Depends libc6
# (= 2.43-7)"). So the install follows what is installed: each source
# package with a package installed at a version that only such an archive has
# (priority below 500 in apt-cache policy: experimental, backports) is
# preferred from that archive, for this apt-get run only (a preferences
# directory of its own: a copy of /etc/apt/preferences.d and one file more),
# and its other packages come at the installed version. The options for
# apt-get go to the array installed_archives_options; what was followed is
# said.
installed_archives_options=()
follow_installed_archives() {
    local low=() line name archives archive followed=() sources=() source directory in_low
    mapfile -t low < <(apt-cache policy 2>/dev/null | awk '
        /^ *-?[0-9]+ / { priority = $1; next }
        /^ *release / && priority < 500 && match($0, /a=[^,]*/) {
            archive = substr($0, RSTART + 2, RLENGTH - 2); if (archive != "now") print archive }' | sort -u)
    [ ${#low[@]} -gt 0 ] || return 0
    # apt list: "libc6/experimental,now 2.44-3 amd64 [installed]": the
    # archives that have the installed version.
    while read -r line; do
        name=${line%%/*}
        archives=${line#*/}
        archives=${archives%% *}
        in_low=''
        for archive in ${archives//,/ }; do
            [ "$archive" = now ] && continue
            if [[ " ${low[*]} " == *" $archive "* ]]; then
                in_low=${in_low:-$archive}
            else
                in_low='' && break
            fi
        done
        [ -n "$in_low" ] && followed+=("$name=$in_low")
    done < <(apt list --installed 2>/dev/null | grep '/')
    [ ${#followed[@]} -gt 0 ] || return 0
    directory=$(mktemp -d)
    cp -a /etc/apt/preferences.d/. "$directory/" 2>/dev/null || true
    for line in "${followed[@]}"; do
        source=$(dpkg-query -W -f='${source:Package}' "${line%%=*}" 2>/dev/null) || continue
        [[ " ${sources[*]} " == *" $source=${line#*=} "* ]] && continue
        sources+=("$source=${line#*=}")
        printf 'Package: src:%s\nPin: release a=%s\nPin-Priority: 500\n\n' "$source" "${line#*=}"
    done >"$directory/zz-snowflake-installed-archives"
    echo "Installed from archives apt takes nothing from by itself, so their packages come from there too:"
    printf '  %s\n' "${sources[@]/=/ from }"
    installed_archives_options=(-o "Dir::Etc::PreferencesParts=$directory")
}

if [ ${#missing[@]} -gt 0 ] || [ ${#copy_of_release[@]} -gt 0 ]; then
    wanted=("${missing[@]}")
    for suffix in "${copy_of_release[@]}"; do wanted+=("${sql_only_extensions[$suffix]}"); done
    echo "Installing for PostgreSQL $PG_MAJOR: ${wanted[*]}"
    "${as_root[@]}" apt-get update -qq
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
    mapfile -t unavailable < <(unserved "${missing[@]}")
    if [ ${#unavailable[@]} -gt 0 ] && $from_experimental; then
        add_experimental_archive "$codename" || exit 1
        mapfile -t unavailable < <(unserved "${missing[@]}")
    elif $from_experimental; then
        prefer_experimental # experimental was in apt's sources already
    fi
    # A major this release does not serve (PG_MAJOR=17 on bookworm) is
    # named as such, not left to apt's "Unable to locate package".
    if [ ${#unavailable[@]} -gt 0 ]; then
        echo "This machine's apt sources ($codename) serve no ${unavailable[*]}." >&2
        echo "PostgreSQL $PG_MAJOR comes with another Debian release (README, \"Supported PostgreSQL\"):" >&2
        echo "unset PG_MAJOR to use this release's major, or add an apt source that serves $PG_MAJOR." >&2
        exit 1
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        follow_installed_archives
        DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
            "${installed_archives_options[@]}" "${missing[@]}" >/dev/null
    fi
    for suffix in "${copy_of_release[@]}"; do copy_extension_of_release "$suffix"; done
fi

# The check behind the table above: the clang PGXS will call is the one named.
makefile_global=$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global
clang=$(sed -n 's/^CLANG *= *//p' "$makefile_global")
if [ "$clang" != "/usr/bin/clang-$llvm" ]; then
    echo "PostgreSQL $PG_MAJOR was built with CLANG = $clang, not clang-$llvm:" >&2
    echo "update the table in scripts/install-deps.sh" >&2
    exit 1
fi
