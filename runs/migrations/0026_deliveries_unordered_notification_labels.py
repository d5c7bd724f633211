"""Webhook deliveries have no default order (nothing lists them; the lookups are by unique
keys); a notification's status has a label saying what it means in the admin."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0025_rollup_tidies_only_when_taking_out"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="webhookdelivery",
            options={"verbose_name_plural": "webhook deliveries"},
        ),
        migrations.AlterField(
            model_name="notification",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "pending (not delivered yet)"),
                    ("sent", "sent"),
                    ("failed", "failed (its last error says why)"),
                ],
                default="pending",
                max_length=16,
            ),
        ),
    ]
