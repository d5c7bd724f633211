"""The rules of a repository's notification settings: addresses, the webhook URL, events.

The webhook is called by the worker itself (not from the sandbox), so its URL follows the
address rule of :mod:`repositories.targets` with no per-repository escape: https only, and
never a loopback, private, link-local (cloud metadata) or other non-public address. Only the
operator can admit a host, globally (``AMTP_NOTIFY_ALLOW_HOSTS``: an on-premises chat server,
the tests' local receiver); such a host may then also be reached over plain http. Link-local
addresses are refused even then.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from repositories.models import NotifyEvent
from repositories.targets import address_kind, allows, origin, resolved, url_form_problem

MAX_EMAILS = 20
MAX_WEBHOOK_URL = 500
EMAILS_NOT_A_LIST = "give a list of email addresses"
TOO_MANY_EMAILS = f"at most {MAX_EMAILS} addresses"
EMAIL_INVALID = "{address!r} is not an email address (one address per entry, nothing else)"
EVENTS_NOT_A_LIST = "give a list of event names"
EVENT_UNKNOWN = "{event!r} is not an event; choose from " + ", ".join(NotifyEvent.values)
EVENT_REPEATED = "{event!r} is listed twice"
WEBHOOK_INVALID = "give an absolute https:// URL with a host, e.g. https://hooks.slack.com/..."
WEBHOOK_CREDENTIALS = "leave user names and passwords out of the URL"
WEBHOOK_TOO_LONG = f"at most {MAX_WEBHOOK_URL} characters"
WEBHOOK_HTTP = (
    "use https:// (plain http only for a host the operator lists in AMTP_NOTIFY_ALLOW_HOSTS)"
)
WEBHOOK_PRIVATE = (
    "{host} is a {kind} address; notifications are never sent there (an operator can admit "
    "a loopback or private host with AMTP_NOTIFY_ALLOW_HOSTS; link-local, where cloud "
    "metadata services answer, never)"
)

_email = EmailValidator()


def _control(text: str) -> bool:
    return any(ord(c) <= 32 or ord(c) == 127 for c in text)


def list_problems(values: Any, limit: int, not_a_list: str, too_many: str) -> list[str]:
    """The rule every list setting shares: a list of strings, at most ``limit`` of them."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return [not_a_list]
    return [too_many] if len(values) > limit else []


def email_problems(addresses: Any) -> list[str]:
    if problems := list_problems(addresses, MAX_EMAILS, EMAILS_NOT_A_LIST, TOO_MANY_EMAILS):
        return problems
    for address in addresses:
        try:
            if _control(address):  # a header injection ("a@b.c\nBcc: ...") is refused here
                raise ValidationError("control character")
            _email(address)
        except ValidationError:
            problems.append(EMAIL_INVALID.format(address=address[:100]))
    return problems


def event_problems(events: Any) -> list[str]:
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        return [EVENTS_NOT_A_LIST]
    problems, seen = [], set()
    for event in events:
        if event not in NotifyEvent.values:
            problems.append(EVENT_UNKNOWN.format(event=event[:50]))
        elif event in seen:
            problems.append(EVENT_REPEATED.format(event=event))
        seen.add(event)
    return problems


def webhook_url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be a notification webhook ("" means none), its form only."""
    if url == "":
        return None
    if problem := url_form_problem(url, MAX_WEBHOOK_URL):
        return {"too long": WEBHOOK_TOO_LONG, "credentials": WEBHOOK_CREDENTIALS}.get(
            problem, WEBHOOK_INVALID
        )
    scheme, host, port = origin(url)
    if scheme == "http" and not allows(settings.AMTP_NOTIFY_ALLOW_HOSTS, host, port):
        return WEBHOOK_HTTP
    return None


def webhook_address_problem(host: str, port: int, addresses: list[str]) -> str | None:
    """Why the worker may not connect to ``host`` at ``addresses``, or None."""
    admitted = allows(settings.AMTP_NOTIFY_ALLOW_HOSTS, host, port)
    for address in addresses:
        kind = address_kind(address)
        if kind and (kind == "link-local" or not admitted):
            return WEBHOOK_PRIVATE.format(host=host, kind=kind)
    return None


def webhook_problem(url: str) -> str | None:
    """The whole rule at save time: the form, then the addresses the name resolves to now. A
    name that does not resolve here is checked again when a notification is sent."""
    if problem := webhook_url_problem(url):
        return problem
    found = resolved(url)
    return webhook_address_problem(*found) if found else None
