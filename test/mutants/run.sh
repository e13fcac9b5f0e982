#!/usr/bin/env bash
# The mutants layer (scripts/test.sh mutants; doc/mutants.md): each mutant in
# test/mutants/mutants.txt removes one safeguard from the real source, and
# the tests named for it must fail. The mutants are applied to a copy of the
# tree (/var/tmp/snowflake-mutants/tree: the working tree's files, its builds left out)
# whose library is built incrementally (one file changes) and
# installed into a PostgreSQL of the layer's own (scripts/private-postgresql.sh),
# so the normal build stays installed for the other layers.
#
#   test/mutants/run.sh                 a sample (MUTANTS_SAMPLE, default 4;
#                                       MUTANTS_SEED, default: the day of the
#                                       year, so successive runs cover the list)
#   test/mutants/run.sh --all           every mutant (doc/mutants.md has the
#                                       figures of the last whole run)
#   test/mutants/run.sh NAME...         the mutants named
#   test/mutants/run.sh --list          the list
# Run as root, as scripts/test.sh is.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh

arguments=()
case ${1:-} in
    --list) exec python3 test/mutants/run.py --tree . --pg-config "$PG_CONFIG" --list ;;
    --all) shift ;;
    "") arguments=(--sample "${MUTANTS_SAMPLE:-4}" --seed "${MUTANTS_SEED:-$((10#$(date +%j)))}") ;;
esac

# Outside the checkout: the servers run as the postgres user, who must reach
# the PostgreSQL of the layer's own, and a checkout under /root is not
# theirs to enter (the tests would fail at initdb: every mutant "killed").
work=${MUTANTS_WORK:-/var/tmp/snowflake-mutants}
mkdir -p "$work"
chmod 755 "$work"
# Warnings are errors in the mutants' builds, as in the project's others.
export WERROR=${WERROR:-1}
private_pg_config=$(scripts/private-postgresql.sh "$work/pg")
rm -rf "$work/tree" "$work/logs"
mkdir -p "$work/tree"
# The working tree without its builds (the copy builds its own).
tar -c --exclude=./.git --exclude=./build --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
    --exclude='*.d' --exclude=./test/clients/node/node_modules . | tar -x -C "$work/tree"
echo "--- mutants of the source in $work/tree, PostgreSQL $("$private_pg_config" --version | cut -d' ' -f2) in $work/pg ---"
python3 test/mutants/run.py --tree "$work/tree" --pg-config "$private_pg_config" \
    --logs "$work/logs" "${arguments[@]}" "$@"
