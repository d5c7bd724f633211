"""The web application ``scripts/bench_submit.py`` serves under gunicorn: AMTP's own URLs
(``amtp_site.urls``, so ``POST /api/runs`` is the product's endpoint, unchanged) plus the
benchmark's anchor, a bare django-ninja endpoint doing one INSERT, at ``/bench-anchor/runs``.

The anchor lives here, never in the product's URLs. Both go through the same server, worker
processes, settings, middleware and database. gunicorn imports this module by name
(``--pythonpath scripts``); the environment (DATABASE_URL, ...) comes from bench_submit.py.
"""

from __future__ import annotations

import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection  # noqa: E402
from django.urls import path  # noqa: E402
from ninja import NinjaAPI, Schema, Status  # noqa: E402

from amtp_site.urls import urlpatterns as product_urls  # noqa: E402

ANCHOR_TABLE = "bench_anchor_row"
anchor = NinjaAPI(urls_namespace="bench-anchor", docs_url=None, openapi_url=None)


class AnchorIn(Schema):
    repo_full_name: str
    ref: str = ""


@anchor.post("/runs", response={201: dict})
def anchor_insert(request, payload: AnchorIn):
    """One INSERT, nothing else: what any endpoint that stores a request costs."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ANCHOR_TABLE} (repo_full_name, ref) VALUES (%s, %s) RETURNING id",
            [payload.repo_full_name, payload.ref],
        )
        (row_id,) = cursor.fetchone()
    return Status(201, {"id": row_id})


urlpatterns = [path("bench-anchor/", anchor.urls), *product_urls]
settings.ROOT_URLCONF = __name__
application = get_wsgi_application()
gc.freeze()  # as amtp_site/wsgi.py does
