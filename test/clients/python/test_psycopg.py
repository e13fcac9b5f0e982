"""psycopg 3 (Debian's python3-psycopg): the recipe of doc/clients.md."""
import json
import pathlib
import unittest

import psycopg

from checks import IdChecks, run_schema, write_json_forms


class Psycopg(IdChecks, unittest.TestCase):
    def test_recipe(self):
        with psycopg.connect() as conn:
            run_schema(conn)
        # guide: begin psycopg
        with psycopg.connect() as conn:  # libpq's PGHOST, PGDATABASE, ... or a conninfo string
            customer_id = conn.execute(
                "INSERT INTO customers (name) VALUES (%s) RETURNING id", ["Ada"]
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO orders (customer_id, item) VALUES (%s, %s)", [customer_id, "book"]
            )

            # Bulk: one RETURNING row per parameter set (psycopg 3.1 and later)
            cur = conn.cursor()
            cur.executemany(
                "INSERT INTO customers (name) VALUES (%s) RETURNING id",
                [["Grace"], ["Edsger"], ["Barbara"]],
                returning=True,
            )
            bulk_ids = [cur.fetchone()[0]]
            while cur.nextset():
                bulk_ids.append(cur.fetchone()[0])

            ts, datacenter_id, worker_id, sequence = conn.execute(
                "SELECT * FROM snowflake_decode(%s)", [customer_id]
            ).fetchone()
        # guide: end
        self.assertExact("customers", [customer_id])
        self.assertExact("customers", bulk_ids)
        self.assertEqual(len(bulk_ids), 3)
        self.assertDecodes(customer_id)
        with psycopg.connect() as conn:
            item = conn.execute(
                "SELECT item FROM orders JOIN customers c ON c.id = customer_id WHERE c.id = %s",
                [customer_id],
            ).fetchone()[0]
        self.assertEqual(item, "book")
        # guide: begin python-json
        payload = json.dumps({"id": str(customer_id), "name": "Ada"})  # the id as a JSON string
        # guide: end
        write_json_forms("python", str(customer_id), {
            "default": json.dumps({"id": customer_id, "name": "Ada"}),
            "safe": payload,
        })

    def test_a_type_of_its_own_comes_back_as_str(self):
        """The JSON option doc/clients.md declines: with a key type of its
        own, to_json writes a string, but psycopg returns str, not int."""
        with psycopg.connect() as conn:
            conn.execute((pathlib.Path(__file__).resolve().parents[1] / "json_type_probe.sql").read_text())
            value, as_json = conn.execute("SELECT id, to_json(probe)->>'id' FROM probe").fetchone()
        self.assertIsInstance(value, str)
        self.assertEqual(value, as_json)


if __name__ == "__main__":
    unittest.main()
