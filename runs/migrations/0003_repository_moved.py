"""The Repository model moved to the ``repositories`` app; table and data stay (state only).

The content type is renamed too, so the permissions already granted on repositories
(``runs.change_repository`` → ``repositories.change_repository``) keep their holders.
"""

import django.db.models.deletion
from django.db import migrations, models


def rename_content_type(apps, schema_editor, old="runs", new="repositories"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label=old, model="repository").update(app_label=new)


def restore_content_type(apps, schema_editor):
    rename_content_type(apps, schema_editor, old="repositories", new="runs")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("repositories", "0001_initial"),
        ("runs", "0002_api_tokens_webhook_deliveries"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="repository",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="runs",
                        to="repositories.repository",
                    ),
                ),
                migrations.DeleteModel(name="Repository"),
            ]
        ),
        migrations.RunPython(rename_content_type, restore_content_type),
    ]
