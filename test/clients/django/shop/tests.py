"""Run by Django's test runner (test/clients/django/run.sh): the recipe's IDs
are exact, in bulk too, behind a foreign key, and decode; the trap fails."""
import datetime
import json
import os
import pathlib

from django.db import IntegrityError, connection, transaction
from django.test import TestCase

from shop.models import Customer, Order, PlainKeyCustomer


class Recipe(TestCase):
    def held(self, ids):
        with connection.cursor() as cur:
            cur.execute("SELECT id::text FROM shop_customer WHERE id::text = ANY(%s)", [[str(i) for i in ids]])
            return sorted(row[0] for row in cur.fetchall())

    def test_recipe(self):
        # guide: begin django
        ada = Customer.objects.create(name="Ada")  # ada.id: the snowflake ID
        order = Order.objects.create(customer=ada, item="book")
        bulk = Customer.objects.bulk_create(
            [Customer(name=name) for name in ("Grace", "Edsger", "Barbara")]
        )  # each with its id (RETURNING)
        # guide: end
        self.assertIsInstance(ada.id, int)
        self.assertEqual(self.held([ada.id]), [str(ada.id)])
        bulk_ids = [customer.id for customer in bulk]
        self.assertEqual(len(set(bulk_ids)), 3)
        self.assertEqual(self.held(bulk_ids), sorted(str(i) for i in bulk_ids))
        self.assertEqual(Order.objects.get(customer_id=ada.id).id, order.id)
        self.assertEqual(Customer.objects.get(pk=ada.id).order_set.get().item, "book")
        with connection.cursor() as cur:
            cur.execute("SELECT ts, datacenter_id, worker_id FROM snowflake_decode(%s)", [ada.id])
            ts, datacenter_id, worker_id = cur.fetchone()
        self.assertEqual((datacenter_id, worker_id),
                         (int(os.environ["SNOWFLAKE_DATACENTER_ID"]), int(os.environ["SNOWFLAKE_WORKER_ID"])))
        self.assertLess(abs((datetime.datetime.now(datetime.timezone.utc) - ts).total_seconds()), 300)

    def test_test_database(self):
        self.assertEqual(connection.settings_dict["NAME"], "test_" + os.environ["PGDATABASE"])

    def test_plain_biginteger_key_inserts_null(self):
        """The trap: Django sends the key it does not have, NULL, and the
        column's default never applies."""
        with self.assertRaisesMessage(IntegrityError, 'null value in column "id"'):
            with transaction.atomic():
                PlainKeyCustomer.objects.create(name="Ada")
