#!/usr/bin/env bash
# Installs the Debian packages snowflake needs to build, run and test it
# (design.md section 9), for the PostgreSQL major that scripts/postgresql.sh
# selects (this Debian release's, or PG_MAJOR=NN). Idempotent: installs only
# what is missing, after one apt-get update.
#
#   scripts/install-deps.sh            everything (build, tests, benchmarks)
#   scripts/install-deps.sh --runtime  only what the five-minute tour needs
#   scripts/install-deps.sh --packaging
#                                      what the tour needs and what building the
#                                      Debian packages needs (scripts/package.sh)
#
# Every package is named here: installs run with --no-install-recommends, so a
# Recommends (pg_prove is only one of postgresql-NN-pgtap) is not an install
# step, and neither is anything installed on this machine by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh

# The clang and LLVM that Debian's build of each major was configured with
# (CLANG and LLVM_CONFIG in its Makefile.global): PGXS compiles LLVM bitcode
# for the JIT with exactly that clang.
case $PG_MAJOR in
    15) llvm=14 ;;  # bookworm
    17) llvm=19 ;;  # trixie
    18) llvm=21 ;;  # forky, sid
    *)
        echo "scripts/install-deps.sh knows no clang for PostgreSQL $PG_MAJOR (15, 17 and 18 are supported)" >&2
        exit 1
        ;;
esac

runtime=(
    "postgresql-$PG_MAJOR"            # the server, psql, initdb, pg_ctl, pgbench
    "postgresql-server-dev-$PG_MAJOR" # PGXS, headers, pg_regress, PostgreSQL::Test::Cluster
    libpq-dev                         # libpq-fe.h and -lpq (the registry's client)
    g++ make
    "clang-$llvm" "llvm-$llvm-dev"    # the JIT bitcode
)
testing=(
    "postgresql-$PG_MAJOR-pgtap"          # pgTAP in the server
    libtap-parser-sourcehandler-pgtap-perl # pg_prove
    perl                                  # prove, Test::More, JSON::PP
    libipc-run-perl                       # PostgreSQL::Test::Cluster
    libfaketime                           # the cluster tests' clock steps
    cmake                                 # cmake and ctest (GoogleTest suite)
    googletest libgtest-dev
    libbenchmark-dev jq                   # test/bench
    clang-format                          # make format-check
    iproute2                              # test/ha: ip netns, veth, bridge (the partition drills)
    pgbouncer                             # test/ha: the transaction pooling drill
    patroni python3-etcd                  # test/ha: the Patroni drills (python3-etcd: its etcd client)
    etcd-server etcd-client               # test/ha: etcd, the Patroni drills' DCS, and etcdctl
    dpkg-dev                              # test/regress: dpkg-source, which apt-get source unpacks with
    debian-keyring                        # test/regress: the signatures of sources no apt index lists
)

packaging=(
    postgresql-server-dev-all         # pg_buildext, dh --with pgxs_loop
    debhelper dpkg-dev build-essential # dpkg-buildpackage (it checks build-essential)
    lintian
    git                               # the clean clone the package is built from
)

packages=("${runtime[@]}")
case ${1:-} in
    --runtime) ;;
    --packaging) packages+=("${packaging[@]}") ;;
    *) packages+=("${testing[@]}") ;;
esac

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    echo "Installing for PostgreSQL $PG_MAJOR: ${missing[*]}"
    "${as_root[@]}" apt-get update -qq
    # A major this release does not serve (PG_MAJOR=17 on bookworm) is
    # named as such, not left to apt's "Unable to locate package".
    unavailable=()
    for package in "${missing[@]}"; do
        apt-cache show "$package" >/dev/null 2>&1 || unavailable+=("$package")
    done
    if [ ${#unavailable[@]} -gt 0 ]; then
        codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
        echo "This machine's apt sources ($codename) serve no ${unavailable[*]}." >&2
        echo "PostgreSQL $PG_MAJOR comes with another Debian release (README, \"Supported PostgreSQL\"):" >&2
        echo "unset PG_MAJOR to use this release's major, or add an apt source that serves $PG_MAJOR." >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

# The check behind the table above: the clang PGXS will call is the one named.
makefile_global=$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global
clang=$(sed -n 's/^CLANG *= *//p' "$makefile_global")
if [ "$clang" != "/usr/bin/clang-$llvm" ]; then
    echo "PostgreSQL $PG_MAJOR was built with CLANG = $clang, not clang-$llvm:" >&2
    echo "update the table in scripts/install-deps.sh" >&2
    exit 1
fi
