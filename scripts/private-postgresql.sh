#!/usr/bin/env bash
# A PostgreSQL installation of one's own: a copy of the installation that
# PG_CONFIG names (its bin/ and lib/, share/ and headers), under DIR, at the
# same paths below DIR. PostgreSQL finds its share/ and lib/ relative to its
# own programs, so the copy's pg_config, initdb and postgres use the copy's
# files: `make install` with PG_CONFIG=<the copy's pg_config> installs
# snowflake there and nowhere else, and servers started from the copy load
# that build. The mutants layer installs each mutated library so, beside the
# normal build (test/mutants/run.sh). Prints the copy's pg_config; made once,
# reused while its pg_config exists.
#
#   scripts/private-postgresql.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/postgresql.sh
source scripts/postgresql.sh
target=${1:?usage: scripts/private-postgresql.sh DIR}
target=$(realpath -m "$target")
bindir=$("$PG_CONFIG" --bindir)
copy_pg_config=$target$bindir/pg_config
if [ ! -x "$copy_pg_config" ]; then
    # bin/ and lib/ of the major (Debian: /usr/lib/postgresql/NN), share/,
    # the headers (server, and libpq's beside them), and the package library
    # directory if it lies elsewhere.
    for directory in "$(dirname "$bindir")" "$("$PG_CONFIG" --sharedir)" \
        "$("$PG_CONFIG" --includedir)" "$("$PG_CONFIG" --pkglibdir)"; do
        [ -d "$target$directory" ] && continue
        mkdir -p "$(dirname "$target$directory")"
        cp -a "$directory" "$target$directory"
    done
    chmod -R a+rX "$target"
fi
# Relocation works only if the copy finds itself: refuse one that does not.
if [ "$("$copy_pg_config" --pkglibdir)" != "$target$("$PG_CONFIG" --pkglibdir)" ]; then
    echo "scripts/private-postgresql.sh: the copy in $target does not find its own lib/ ($("$copy_pg_config" --pkglibdir))" >&2
    exit 1
fi
echo "$copy_pg_config"
