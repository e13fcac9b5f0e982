"""The Django recipe of doc/clients.md, and the trap beside it."""
from django.db import models


# guide: begin django-models
class SnowflakeField(models.BigAutoField):
    """A bigint primary key that PostgreSQL fills: Django leaves it out of
    INSERT and reads it back with RETURNING, as it does for an AutoField."""

    def db_type(self, connection):
        return "bigint DEFAULT snowflake_nextval()"

    def db_type_suffix(self, connection):
        return None  # not GENERATED ... AS IDENTITY (Django 4.1 and later)


class Customer(models.Model):
    id = SnowflakeField(primary_key=True)
    name = models.TextField()


class Order(models.Model):
    id = SnowflakeField(primary_key=True)
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)  # a bigint column
    item = models.TextField()
# guide: end


# guide: begin django-trap-model
class PlainKeyCustomer(models.Model):
    """The trap: a plain BigIntegerField key, its default set in a migration."""

    id = models.BigIntegerField(primary_key=True)
    name = models.TextField()
# guide: end
