"""POSTing a notification's JSON to a webhook, and nowhere the rules forbid.

The name is resolved here, every address it resolves to is checked by
``repositories.notify_rules``, and the connection goes to the address that was checked (TLS
still verifies the certificate for the name): a name that moves to a private or metadata
address between the check and the connection (DNS rebinding) cannot take the request there.
No redirect is followed and at most ``MAX_ANSWER`` bytes of the answer are read.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import urllib3
from django.conf import settings

from repositories.notify_rules import webhook_address_problem, webhook_url_problem
from repositories.targets import origin, resolve
from runs.errors import NotificationRefused

MAX_ANSWER = 4096
REFUSED_ANSWER = "the webhook answered {status}: {body!r}"


def post_json(url: str, body: dict) -> int:
    """POST ``body`` to ``url``; its status (2xx). NotificationRefused when the rules forbid
    the URL or the receiver refuses the request (4xx but 429); other errors may be retried."""
    if problem := webhook_url_problem(url):
        raise NotificationRefused(f"notify_webhook_url: {problem}")
    scheme, host, port = origin(url)
    addresses = resolve(host, port)  # OSError: retried
    if problem := webhook_address_problem(host, port, addresses):
        raise NotificationRefused(f"notify_webhook_url: {problem}")
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    timeout = urllib3.Timeout(total=settings.AMTP_NOTIFY_TIMEOUT_S)
    if scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            addresses[0], port, timeout=timeout, server_hostname=host, assert_hostname=host
        )
    else:
        pool = urllib3.HTTPConnectionPool(addresses[0], port, timeout=timeout)
    with pool:
        answer = pool.urlopen(
            "POST",
            path,
            body=json.dumps(body).encode(),
            headers={
                "Host": parts.netloc,
                "Content-Type": "application/json",
                "User-Agent": "amtp-notifications",
            },
            redirect=False,
            retries=False,
            preload_content=False,
        )
        said = answer.read(MAX_ANSWER, decode_content=False).decode("utf-8", "replace")
        answer.release_conn()
    if 200 <= answer.status < 300:
        return answer.status
    error = REFUSED_ANSWER.format(status=answer.status, body=said[:200])
    if answer.status < 500 and answer.status != 429:  # refused, or a redirect: not followed
        raise NotificationRefused(error)
    raise ConnectionError(error)
