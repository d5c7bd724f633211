"""Grants have no default order: every request reads its user's grants, and ordering them by
repository joined and sorted ``repositories`` each time. The admin orders its list."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("repositories", "0014_api_token_path"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="repositorygrant",
            options={},
        ),
    ]
