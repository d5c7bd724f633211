"""``manage.py ensure_admin``: make sure an operator can log in to the admin.

The user is ``admin`` (``AMTP_ADMIN_USER``). Its password is ``AMTP_ADMIN_PASSWORD`` when set;
otherwise one is generated on first start and kept in ``.devstack/admin-password`` (git-ignored)
so it can be looked up again. Never used in production: create real users there.
"""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from amtp_site import devstack


class Command(BaseCommand):
    help = "Create the local admin login if it does not exist and print how to log in."

    def handle(self, **options):
        username = os.environ.get("AMTP_ADMIN_USER", "admin")
        password_file = devstack.STACK_DIR / "admin-password"
        password = os.environ.get("AMTP_ADMIN_PASSWORD", "")
        if not password and password_file.exists():
            password = password_file.read_text().strip()
        if not password:
            password = secrets.token_urlsafe(12)
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.is_staff = user.is_superuser = True
            user.save()
        if "AMTP_ADMIN_PASSWORD" not in os.environ:
            password_file.parent.mkdir(parents=True, exist_ok=True)
            password_file.write_text(password + "\n")
            password_file.chmod(0o600)
            where = f"password in {password_file}"
        else:
            where = "password from AMTP_ADMIN_PASSWORD"
        self.stdout.write(f"Admin login: http://127.0.0.1:8000/admin/  user {username!r}, {where}")
        if created:
            self.stdout.write(f"  (first start) password: {password}")
