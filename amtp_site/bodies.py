"""Bounded request bodies on every endpoint, chunked or not.

No body is read past its limit, whatever ``Content-Length`` says or when there is none
(``Transfer-Encoding: chunked``):

- :class:`BoundedBodyMiddleware` reads each request's body, at most
  ``DATA_UPLOAD_MAX_MEMORY_SIZE`` + 1 bytes, before any view (ninja reads ``request.body``
  whole otherwise); an endpoint with a smaller limit (the GitHub webhook) checks it again
  with :func:`read_body`.
- A chunked body reaches a WSGI application only when the server de-chunks it and says so
  (``wsgi.input_terminated``: gunicorn, mod_wsgi); any other WSGI server (Django's runserver)
  would hand over the raw chunk framing, so such a request is refused with 411.
- Under ASGI, Django reads a whole body into a temporary file before any middleware runs:
  :class:`BoundedBodies` (in ``amtp_site.asgi``) answers 413 once a body passes the limit.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from amtp_site.problems import problem_document, problem_response

TOO_LARGE = "the request body is larger than this server accepts"
LENGTH_REQUIRED = (
    "send Content-Length: this server cannot read a chunked request body (Transfer-Encoding: "
    "chunked) without knowing its size"
)


class LengthRequired(Exception):
    """A chunked body this server cannot read safely (HTTP 411)."""


def read_body(request: HttpRequest, limit: int) -> bytes:
    """The request body, reading at most ``limit`` + 1 bytes: RequestDataTooBig over the limit,
    LengthRequired for a chunked body the WSGI server did not de-chunk."""
    declared = (request.META.get("CONTENT_LENGTH") or "").strip()
    if declared and (not declared.isdigit() or int(declared) > limit):
        raise RequestDataTooBig(TOO_LARGE)
    if hasattr(request, "_body"):
        data = request._body
    else:
        chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
        stream = _chunked_stream(request) if chunked and not declared else request
        data = stream.read(limit + 1)
        request._body = data  # request.body and request.POST read this from now on
    if len(data) > limit:
        raise RequestDataTooBig(TOO_LARGE)
    return data


def _chunked_stream(request: HttpRequest):
    if "wsgi.input" not in request.META:
        return request  # ASGI: the server de-chunked it; BoundedBodies bounded it
    if request.META.get("wsgi.input_terminated"):
        return request.META["wsgi.input"]  # Django would read 0 bytes of it (no length)
    raise LengthRequired(LENGTH_REQUIRED)


class BoundedBodyMiddleware:
    """Reads every body bounded before a view can read it unbounded; answers 413 or 411."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        try:
            read_body(request, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        except RequestDataTooBig:
            return problem_response(request, 413, "payload-too-large", TOO_LARGE)
        except LengthRequired:
            return problem_response(request, 411, "length-required", LENGTH_REQUIRED)
        return self.get_response(request)


class BoundedBodies:
    """ASGI: answers 413 as soon as a request body passes ``limit`` bytes, before Django (which
    would spool all of it to disk first) sees the request."""

    def __init__(self, app, limit: int | None = None) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit if self.limit is not None else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            return await _too_large(scope, send)
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > limit:
                return await _too_large(scope, send)
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replay, send)


async def _too_large(scope, send) -> None:
    body = json.dumps(problem_document(413, "payload-too-large", TOO_LARGE, scope["path"]))
    headers = [(b"content-type", b"application/problem+json"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
