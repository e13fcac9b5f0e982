"""The Django recipe's migration: the extension, then the tables."""
from django.contrib.postgres.operations import CreateExtension
from django.db import migrations, models

import shop.models


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        # guide: begin django-migration
        CreateExtension("snowflake"),
        migrations.CreateModel(
            name="Customer",
            fields=[
                ("id", shop.models.SnowflakeField(primary_key=True, serialize=False)),
                ("name", models.TextField()),
            ],
        ),
        # guide: end
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", shop.models.SnowflakeField(primary_key=True, serialize=False)),
                ("customer", models.ForeignKey(on_delete=models.deletion.CASCADE, to="shop.customer")),
                ("item", models.TextField()),
            ],
        ),
        migrations.CreateModel(
            name="PlainKeyCustomer",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("name", models.TextField()),
            ],
        ),
        # guide: begin django-trap-migration
        migrations.RunSQL(
            "ALTER TABLE shop_plainkeycustomer ALTER id SET DEFAULT snowflake_nextval()"
        ),
        # guide: end
    ]
