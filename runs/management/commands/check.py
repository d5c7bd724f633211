"""`manage.py check`, with the admin's pages registered first.

The admin registers its pages when the URLs load (`SimpleAdminConfig`, `admin.autodiscover()` in
amtp_site/urls.py), and Django runs its checks in no fixed order: loading the URLs before the
checks makes the admin's own checks (`admin.E…`) run on every page, every time.
"""

from django.core.management.commands.check import Command as CheckCommand


class Command(CheckCommand):
    def handle(self, *app_labels, **options):
        import amtp_site.urls  # noqa: F401  (registers the admin's pages)

        return super().handle(*app_labels, **options)
