"""The API's router: its reads name the access they need, and the problems every read can
answer with are listed here once, in the same words for every app's router."""

from __future__ import annotations

from typing import Any

from ninja import Router
from ninja.pagination import paginate

from access.auth import Access, scoped
from amtp_site.pagination import Page
from amtp_site.problems import documented


class ApiRouter(Router):
    def read(self, path: str, out: Any, access: Access, **options):
        """A GET answering ``out`` to a caller holding ``access``; otherwise 401 or 403, 422
        for a parameter that is off, and 404 where the path names something the caller may
        not see (it reads as one that does not exist)."""
        statuses = (401, 403, 404, 422) if "{" in path else (401, 403, 422)
        return self.get(
            path, response={200: out, **documented(*statuses)}, auth=scoped(access), **options
        )

    def page(self, item: Any, access: Access, **options):
        """The router's list: a GET of one ``Page`` of ``item`` (``amtp_site.pagination``)."""
        read = self.read("", list[item], access, **options)
        return lambda view: read(paginate(Page)(view))
