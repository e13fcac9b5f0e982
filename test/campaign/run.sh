#!/usr/bin/env bash
# The fault campaign (scripts/test.sh campaign; doc/campaign.md): builds and
# installs snowflake into PG_CONFIG's PostgreSQL (scripts/postgresql.sh),
# then runs test/campaign/campaign.pl as the postgres user, from a copy of
# the test files that user may read. Run as root, as scripts/test.sh is.
#
#   test/campaign/run.sh [--mutant NAME] [campaign.pl options]
#       --seed N (repeatable) --operations N --budget-s N --schedule FILE
#       --shrink-budget-s N --no-shrink --no-replay --keep
#
# --mutant NAME: a mutant of test/mutants/mutants.txt (test/mutants/run.py
# --apply) is applied to a copy of the tree (/var/tmp/snowflake-campaign/tree),
# built and installed into a PostgreSQL of the campaign's own
# (scripts/private-postgresql.sh /var/tmp/snowflake-campaign/pg), and the campaign runs
# its servers from there: the normal build stays installed.
# The schedules a failing run was shrunk to (seed_N.schedule) and the cluster
# tests made of them (09x_campaign_seed_N.pl) are copied to build/campaign/found/.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh
# Warnings are errors in the campaign's builds, as in the project's others.
export WERROR=${WERROR:-1}

mutant=
arguments=()
while [ $# -gt 0 ]; do
    case $1 in
        --mutant) mutant=${2:?--mutant needs a name}; shift 2 ;;
        --schedule) arguments+=("$1" "$(realpath "${2:?--schedule needs a file}")"); shift 2 ;;
        *) arguments+=("$1"); shift ;;
    esac
done

pg_config=$PG_CONFIG
if [ -n "$mutant" ]; then
    # Outside the checkout, as the mutants layer's: the postgres user must
    # reach the PostgreSQL the servers run from (a checkout under /root is
    # not theirs to enter).
    work=${CAMPAIGN_WORK:-/var/tmp/snowflake-campaign}
    mkdir -p "$work"
    chmod 755 "$work"
    pg_config=$(scripts/private-postgresql.sh "$work/pg")
    rm -rf "$work/tree"
    mkdir -p "$work/tree"
    tar -c --exclude=./.git --exclude=./build --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
        --exclude='*.d' --exclude=./test/clients/node/node_modules . | tar -x -C "$work/tree"
    python3 test/mutants/run.py --tree "$work/tree" --apply "$mutant"
    make -s -C "$work/tree" -j "$(nproc)" PG_CONFIG="$pg_config" >/dev/null
    make -s -C "$work/tree" PG_CONFIG="$pg_config" install >/dev/null
    arguments+=(--mutant "$mutant")
else
    make -s -j "$(nproc)"
    make -s install >/dev/null
fi
bindir=$(dirname "$pg_config")
pgxs=$(dirname "$(dirname "$("$pg_config" --pgxs)")")

copy=$(mktemp -d /tmp/snowflake-campaign.XXXXXX)
mkdir -p "$copy/test" "$copy/doc"
cp -r test/perl test/campaign "$copy/test/"
cp doc/registry.md "$copy/doc/"
chown -R postgres: "$copy"
for argument in "${arguments[@]}"; do
    # A schedule file the postgres user may read.
    if [ -f "$argument" ]; then cp "$argument" "$copy/"; chown postgres: "$copy/$(basename "$argument")"; fi
done
mapped=()
for argument in "${arguments[@]}"; do
    if [ -f "$argument" ]; then mapped+=("$copy/$(basename "$argument")"); else mapped+=("$argument"); fi
done
status=0
(cd "$copy" && runuser -u postgres -- env PATH="$bindir:$PATH" PG_REGRESS="$pgxs/test/regress/pg_regress" \
    TESTDIR="$copy" TESTDATADIR="$copy/tmp_check" TESTLOGDIR="$copy/tmp_check/log" \
    perl -I "$pgxs/test/perl" -I "$copy/test/perl" test/campaign/campaign.pl \
    --out "$copy/out" --tests-dir "$ROOT/test/t" "${mapped[@]}") || status=$?
if compgen -G "$copy/out/*.schedule" >/dev/null; then
    mkdir -p build/campaign/found
    cp "$copy"/out/*.schedule "$copy"/out/*_campaign_seed_*.pl build/campaign/found/
    echo "campaign: shrunk schedules and tests in build/campaign/found/"
fi
if [ $status -ne 0 ]; then
    echo "campaign: failed; records and logs kept in $copy (out/runNNN: sessions, events, server logs)"
    exit $status
fi
rm -rf "$copy"
