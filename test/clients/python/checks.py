"""What every Python client test asserts about the IDs it got back, checked on
the server through a psycopg connection of its own: each ID is one the server
holds, digit for digit; it decodes to this node; and, for the JSON test of the
layer (test/clients/node/json.test.js), how the language writes it in JSON."""
import datetime
import json
import os
import pathlib

import psycopg

DATACENTER_ID = int(os.environ["SNOWFLAKE_DATACENTER_ID"])
WORKER_ID = int(os.environ["SNOWFLAKE_WORKER_ID"])
JSON_DIR = pathlib.Path(__file__).resolve().parents[3] / "build" / "clients" / "json"


def ids_held(table, ids):
    """The IDs among `ids` that `table` holds, as the server writes them."""
    with psycopg.connect() as conn:
        rows = conn.execute(
            f"SELECT id::text FROM {table} WHERE id::text = ANY(%s)", [[str(i) for i in ids]]
        ).fetchall()
    return sorted(row[0] for row in rows)


class IdChecks:
    """Assertions for a unittest.TestCase."""

    def assertExact(self, table, ids):
        for value in ids:
            self.assertIsInstance(value, int, f"{value!r} is not an int")
        self.assertEqual(len(set(ids)), len(ids), f"repeated IDs in {ids}")
        self.assertEqual(ids_held(table, ids), sorted(str(i) for i in ids),
                         f"{table} does not hold exactly these IDs")

    def assertDecodes(self, value):
        with psycopg.connect() as conn:
            ts, datacenter_id, worker_id = conn.execute(
                "SELECT ts, datacenter_id, worker_id FROM snowflake_decode(%s)", [value]
            ).fetchone()
        self.assertEqual((datacenter_id, worker_id), (DATACENTER_ID, WORKER_ID))
        age = datetime.datetime.now(datetime.timezone.utc) - ts
        self.assertLess(abs(age.total_seconds()), 300, f"{value} decodes to {ts}")


def write_json_forms(client, exact, forms):
    """Leaves what `client` wrote as JSON for each form (default, safe) for the
    node test to parse; `exact` is the ID as the server writes it."""
    JSON_DIR.mkdir(parents=True, exist_ok=True)
    (JSON_DIR / f"{client}.json").write_text(json.dumps({"exact": exact, "forms": forms}))


def run_schema(conn):
    """Runs test/clients/schema.sql, the drivers' schema in doc/clients.md."""
    conn.execute((pathlib.Path(__file__).resolve().parents[1] / "schema.sql").read_text())
