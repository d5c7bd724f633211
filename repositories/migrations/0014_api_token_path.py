from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("repositories", "0013_app_recipe"),
    ]

    operations = [
        migrations.AddField(
            model_name="repository",
            name="api_token_path",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="For a JSON API with token auth, instead of a login page: the path on "
                "the app's origin that issues a token (/token). AMTP POSTs the login user name "
                "and password there as a form (username, password: OAuth 2.0's password grant), "
                "else as JSON, and sends the token of the answer (access_token) as a bearer "
                "token. Empty: no API token.",
                max_length=500,
                verbose_name="API token path",
            ),
        ),
        migrations.AddField(
            model_name="repository",
            name="api_key_in",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="For a JSON API that takes a ready key instead: where the key goes, "
                "'query NAME' (query api-key) or 'header NAME' (header X-API-Key). The key is the "
                "login password (stored encrypted, or the password variable); no user name is "
                "needed. Empty: no API key.",
                max_length=60,
                verbose_name="API key sent in",
            ),
        ),
    ]
