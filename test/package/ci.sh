#!/usr/bin/env bash
# CI's check of the two ways users install snowflake (README, "Installation"),
# each on a machine that never built it:
# 1. in a fresh root of SUITE (default bookworm), scripts/package.sh builds the
#    Debian package from the committed tree, and `make dist` the PGXN zip;
# 2. in another fresh root, test/package/installed.sh installs the package with
#    apt and checks it (pg_createcluster, IDs, pg_regress), then removes it,
#    installs the zip with `pgxn install` and checks that the same way.
#
#   test/package/ci.sh [bookworm|trixie|forky]
#   PG_MAJOR=19 test/package/ci.sh forky    the package for 19 (from Debian's
#                                           experimental archive): both roots'
#                                           commands run with PG_MAJOR=19
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=${1:-bookworm}
# fresh-root.sh runs each command with a clean environment: the choice of
# major is handed on with --pg-major.
major=()
[ -z "${PG_MAJOR:-}" ] || major=(--pg-major "$PG_MAJOR")

dist=$(mktemp -d /var/tmp/snowflake-dist.XXXXXX)
trap 'rm -rf "$dist"' EXIT

scripts/fresh-root.sh "${major[@]}" --copy-out "$dist" "$suite" -- \
    scripts/package.sh 'make -s dist && mkdir -p dist && mv snowflake-*.zip dist/'
scripts/fresh-root.sh "${major[@]}" --copy-in "$dist" "$suite" -- \
    'test/package/installed.sh deb dist' 'test/package/installed.sh pgxn dist/snowflake-*.zip'
