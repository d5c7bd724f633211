"""``manage.py openapi_document``: the API's OpenAPI document, as ``/api/openapi.json`` serves
it; ``--release X.Y.Z`` writes it to ``docs/api/openapi-X.Y.Z.json``, the document later
versions are checked against for breaking changes (docs/releasing.md)."""

import json
import re
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from ninja.responses import NinjaJSONEncoder

from amtp_site.urls import api

RELEASES = Path(settings.BASE_DIR) / "docs" / "api"
EXISTS = "{path} exists: a release's document does not change (--replace before the release only)"


def document_text() -> str:
    """The document the API serves (ninja's view: the same call, the same encoder)."""
    schema = api.get_openapi_schema(path_params={})
    return json.dumps(schema, cls=NinjaJSONEncoder, indent=2, ensure_ascii=False) + "\n"


class Command(BaseCommand):
    help = "Print the API's OpenAPI document, or write a release's (--release 1.0.0)."

    def add_arguments(self, parser):
        parser.add_argument("--release", help="write docs/api/openapi-RELEASE.json")
        parser.add_argument("--replace", action="store_true", help="overwrite it")

    def handle(self, *args, release, replace, **options):
        if not release:
            self.stdout.write(document_text(), ending="")
            return
        if not re.fullmatch(r"\d+\.\d+\.\d+", release):
            raise CommandError(f"--release {release!r}: expected MAJOR.MINOR.PATCH, e.g. 1.0.0")
        path = RELEASES / f"openapi-{release}.json"
        if path.exists() and not replace:
            raise CommandError(EXISTS.format(path=f"docs/api/{path.name}"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document_text())
        self.stdout.write(f"wrote docs/api/{path.name}")
