"""Initializer of spawned agent processes. Imports nothing from Django apps, because the
child unpickles this function before Django is set up."""

import os


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
    import django

    django.setup()
