"""SQLAlchemy Core and ORM (Debian's python3-sqlalchemy, 1.4 on bookworm, 2.0
on trixie and forky): the recipes of doc/clients.md, and the trap of a Core
executemany that does not ask for the IDs."""
import os
import unittest

import sqlalchemy
from sqlalchemy import BigInteger, Column, ForeignKey, MetaData, Table, Text, create_engine, insert, text
from sqlalchemy.orm import Session, declarative_base, relationship

from checks import IdChecks

engine = create_engine(os.environ["DATABASE_URL"], future=True)

# guide: begin sqlalchemy-core-tables
metadata = MetaData()
customers = Table(
    "customers", metadata,
    Column("id", BigInteger, primary_key=True, server_default=text("snowflake_nextval()")),
    Column("name", Text, nullable=False),
)
orders = Table(
    "orders", metadata,
    Column("id", BigInteger, primary_key=True, server_default=text("snowflake_nextval()")),
    Column("customer_id", BigInteger, ForeignKey("customers.id"), nullable=False),
    Column("item", Text, nullable=False),
)
# guide: end

# guide: begin sqlalchemy-orm-models
Base = declarative_base()


class Customer(Base):
    __tablename__ = "customers"
    id = Column(BigInteger, primary_key=True, server_default=text("snowflake_nextval()"))
    name = Column(Text, nullable=False)
    orders = relationship("Order", back_populates="customer")


class Order(Base):
    __tablename__ = "orders"
    id = Column(BigInteger, primary_key=True, server_default=text("snowflake_nextval()"))
    customer_id = Column(BigInteger, ForeignKey("customers.id"), nullable=False)
    item = Column(Text, nullable=False)
    customer = relationship("Customer", back_populates="orders")
# guide: end


class SqlAlchemy(IdChecks, unittest.TestCase):
    def setUp(self):
        with engine.begin() as conn:
            conn.execute(text("DROP TABLE IF EXISTS orders, customers"))
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS snowflake"))

    def test_core(self):
        # guide: begin sqlalchemy-core
        metadata.create_all(engine)
        with engine.begin() as conn:
            customer_id = conn.execute(
                insert(customers).values(name="Ada")
            ).inserted_primary_key[0]
            conn.execute(insert(orders).values(customer_id=customer_id, item="book"))

            # Bulk: ask for the IDs with RETURNING
            bulk_ids = conn.execute(
                insert(customers).returning(customers.c.id),
                [{"name": "Grace"}, {"name": "Edsger"}, {"name": "Barbara"}],
            ).scalars().all()

            decoded = conn.execute(
                text("SELECT * FROM snowflake_decode(:id)"), {"id": customer_id}
            ).one()
        # guide: end
        self.assertExact("customers", [customer_id])
        self.assertExact("customers", bulk_ids)
        self.assertEqual(len(bulk_ids), 3)
        self.assertDecodes(customer_id)
        self.assertEqual((decoded.datacenter_id, decoded.worker_id), (3, 7))
        with engine.connect() as conn:
            self.assertEqual(conn.execute(
                text("SELECT item FROM orders WHERE customer_id = :id"), {"id": customer_id}).scalar(), "book")

    def test_core_executemany_without_returning_gives_no_ids(self):
        """The trap: a plain executemany inserts the rows but reports None for
        every key; only .returning() brings the IDs back."""
        metadata.create_all(engine)
        with engine.begin() as conn:
            result = conn.execute(insert(customers), [{"name": "Grace"}, {"name": "Edsger"}])
            self.assertEqual(result.rowcount, 2)
            # guide: begin sqlalchemy-trap
            keys = result.inserted_primary_key_rows  # [(None,), (None,)]: no IDs
            # guide: end
        self.assertEqual(keys, [(None,), (None,)], f"SQLAlchemy {sqlalchemy.__version__}")

    def test_orm(self):
        Base.metadata.create_all(engine)
        # guide: begin sqlalchemy-orm
        with Session(engine) as session:
            ada = Customer(name="Ada", orders=[Order(item="book")])
            session.add(ada)
            bulk = [Customer(name=name) for name in ("Grace", "Edsger", "Barbara")]
            session.add_all(bulk)
            session.commit()  # each id comes back by RETURNING
            customer_id, bulk_ids = ada.id, [customer.id for customer in bulk]
            order_customer_id = ada.orders[0].customer_id
        # guide: end
        self.assertExact("customers", [customer_id])
        self.assertExact("customers", bulk_ids)
        self.assertEqual(order_customer_id, customer_id)
        self.assertDecodes(customer_id)
        with Session(engine) as session:
            self.assertEqual(session.get(Customer, customer_id).orders[0].item, "book")


if __name__ == "__main__":
    unittest.main()
