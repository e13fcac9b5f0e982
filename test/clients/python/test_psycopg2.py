"""psycopg2 (Debian's python3-psycopg2): the recipe of doc/clients.md."""
import unittest

import psycopg
import psycopg2
import psycopg2.extras

from checks import IdChecks, run_schema


class Psycopg2(IdChecks, unittest.TestCase):
    def test_recipe(self):
        with psycopg.connect() as conn:
            run_schema(conn)
        # guide: begin psycopg2
        conn = psycopg2.connect("")  # "": libpq's PGHOST, PGDATABASE, ...
        with conn, conn.cursor() as cur:  # one transaction
            cur.execute("INSERT INTO customers (name) VALUES (%s) RETURNING id", ["Ada"])
            customer_id = cur.fetchone()[0]
            cur.execute(
                "INSERT INTO orders (customer_id, item) VALUES (%s, %s)", [customer_id, "book"]
            )

            # Bulk: one statement, every ID back
            rows = psycopg2.extras.execute_values(
                cur,
                "INSERT INTO customers (name) VALUES %s RETURNING id",
                [("Grace",), ("Edsger",), ("Barbara",)],
                fetch=True,
            )
            bulk_ids = [row[0] for row in rows]

            cur.execute("SELECT * FROM snowflake_decode(%s)", [customer_id])
            ts, datacenter_id, worker_id, sequence = cur.fetchone()
        conn.close()
        # guide: end
        self.assertExact("customers", [customer_id])
        self.assertExact("customers", bulk_ids)
        self.assertEqual(len(bulk_ids), 3)
        self.assertDecodes(customer_id)
        self.assertEqual((datacenter_id, worker_id), (3, 7))
        with psycopg.connect() as check:
            self.assertEqual(check.execute(
                "SELECT item FROM orders WHERE customer_id = %s", [customer_id]).fetchone()[0], "book")


if __name__ == "__main__":
    unittest.main()
