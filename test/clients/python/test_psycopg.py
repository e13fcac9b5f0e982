"""psycopg 3 (Debian's python3-psycopg): the recipe of doc/clients.md."""
import json
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
        write_json_forms("python", str(customer_id), {
            "default": json.dumps({"id": customer_id}),
            "safe": json.dumps({"id": str(customer_id)}),
        })


if __name__ == "__main__":
    unittest.main()
