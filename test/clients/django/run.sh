#!/usr/bin/env bash
# Django (Debian's python3-django): the recipe of doc/clients.md, run by
# Django's own test runner, which creates the test database (the migration
# creates the extension in it) and drops it afterwards; this script checks
# that it was dropped.
set -euo pipefail
cd "$(dirname "$0")"
python3 manage.py test --verbosity 2 shop
left=$(psql -X -At -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = 'test_$PGDATABASE'")
[ "$left" = 0 ] || { echo "Django's test runner left the database test_$PGDATABASE behind" >&2; exit 1; }
echo "the test runner dropped test_$PGDATABASE"
