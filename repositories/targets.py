"""Target URLs (a repository's ``preview_url``, a run's ``target_url``, a pull request's preview
from ``pr_preview_url_template`` or its deployment): the one rule, for the admin form, the
launch form, ``launch_run``, the API and the webhooks.

The generated tests run against this URL with ``BASE_URL`` set to it, so it must be an absolute
http(s) URL with a host. Credentials in it are refused: the URL is shown in the admin, the API,
the verification report and the pull request body.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any
from urllib.parse import quote, urlsplit

MAX_TARGET_URL_LENGTH = 500
TARGET_URL_INVALID = (
    "give an absolute http:// or https:// URL with a host, e.g. https://preview.example.com"
)
TARGET_URL_CREDENTIALS = "leave user names and passwords out of the URL"
TARGET_URL_TOO_LONG = f"at most {MAX_TARGET_URL_LENGTH} characters"
TARGET_URL_PATTERN = r"^https?://[^\s/?#@]+(/[^\s#]*)?$"


def target_url_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a target URL, or None when it can ("" means none: allowed)."""
    if value == "":
        return None
    problem = url_form_problem(value, MAX_TARGET_URL_LENGTH)
    return {
        "too long": TARGET_URL_TOO_LONG,
        "credentials": TARGET_URL_CREDENTIALS,
        "invalid": TARGET_URL_INVALID,
    }.get(problem)


# A pull request's preview (``pr_preview_url_template``): a URL template, or this word alone,
# which says each preview's URL comes from its GitHub deployment (``deployment_status``).
FROM_DEPLOYMENT = "{deployment}"
PREVIEW_PLACEHOLDERS = ("{pr}", "{sha}", "{branch}")
PREVIEW_TEMPLATE_PLACEHOLDER = (
    "{found} is not a placeholder: use {pr}, {sha} and {branch}, or {deployment} alone for the "
    "URL of each deployment"
)
PREVIEW_TEMPLATE_DEPLOYMENT = (
    "{deployment} stands alone (the deployment's URL is used as it is): no other text with it"
)
PREVIEW_TEMPLATE_URL = "with {{pr}}, {{sha}} and {{branch}} filled in: {problem}"
_BRACED = re.compile(r"\{[^{}]*\}")


def preview_url(template: str, *, pr: int, sha: str, branch: str) -> str:
    """``template`` with ``{pr}``, ``{sha}`` and ``{branch}`` filled in (the branch quoted;
    plain replacement, never ``str.format``, which would read attributes)."""
    filled = template.replace("{pr}", str(pr)).replace("{sha}", sha)
    return filled.replace("{branch}", quote(branch, safe=""))


def preview_template_problem(template: Any) -> str | None:
    """Why ``template`` cannot be a PR preview URL template ("" means none: allowed)."""
    if template in ("", FROM_DEPLOYMENT):
        return None
    if not isinstance(template, str):
        return TARGET_URL_INVALID
    if FROM_DEPLOYMENT in template:
        return PREVIEW_TEMPLATE_DEPLOYMENT
    for found in _BRACED.findall(template):
        if found not in PREVIEW_PLACEHOLDERS:
            return PREVIEW_TEMPLATE_PLACEHOLDER.replace("{found}", found, 1)
    sample = preview_url(template, pr=1, sha="0" * 40, branch="main")
    problem = target_url_problem(sample)
    return PREVIEW_TEMPLATE_URL.format(problem=problem) if problem else None


def url_form_problem(value: Any, max_length: int) -> str | None:
    """What keeps ``value`` from being an absolute http(s) URL with a host and no credentials
    or fragment, by its form alone: "too long", "credentials" or "invalid" (None: nothing).
    The one form rule of target URLs and notification webhooks."""
    if not isinstance(value, str):
        return "invalid"
    if len(value) > max_length:
        return "too long"
    if any(ord(c) <= 32 or ord(c) == 127 for c in value):
        return "invalid"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        return "invalid"
    if parts.username is not None or parts.password is not None:
        return "credentials"
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        return "invalid"
    return None


# The network rule of verification (the proxy's, the probe's and the submit check's): a test
# reaches the target origin and nothing else, and never a loopback, link-local, private or
# unique-local address unless the repository's allow-list names the host. Metadata services
# (169.254.169.254, fd00:ec2::254), the worker's own databases and the LAN all sit at such
# addresses.
TARGET_URL_PRIVATE = (
    "{host} is a {kind} address; tests may reach it only when the repository's allowed hosts "
    "name it (admin → Repositories → Allowed hosts, or launch_run --allow-host {host})"
)
ALLOW_HOST_INVALID = "give HOST or HOST:PORT (a name or an IP address, no scheme or path): {entry}"
MAX_ALLOW_HOSTS = 20
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$")


def parse_allow_host(entry: str) -> tuple[str, int | None]:
    """``HOST`` or ``HOST:PORT`` (``[v6]:PORT`` for IPv6) as (lower-case host, port or None);
    ValueError naming the rule otherwise."""
    text = str(entry).strip()
    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest:
            if not rest.startswith(":") or not rest[1:].isdigit():
                raise ValueError(ALLOW_HOST_INVALID.format(entry=entry))
            port = int(rest[1:])
    elif text.count(":") == 1:
        host, _, number = text.partition(":")
        if not number.isdigit():
            raise ValueError(ALLOW_HOST_INVALID.format(entry=entry))
        port = int(number)
    host = host.lower().rstrip(".")
    if port is not None and not 0 < port < 65536:
        raise ValueError(ALLOW_HOST_INVALID.format(entry=entry))
    if not host or len(host) > 253 or not (_is_ip(host) or _HOST.match(host)):
        raise ValueError(ALLOW_HOST_INVALID.format(entry=entry))
    return host, port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def address_kind(address: str) -> str | None:
    """Why ``address`` is not public ("loopback", "link-local", "private", …), or None."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, flag in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("unspecified", ip.is_unspecified),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),  # RFC 1918, fc00::/7 (unique-local), shared and reserved
        ("reserved", ip.is_reserved),
        ("non-public", not ip.is_global),  # shared (100.64/10), documentation, …
    ):
        if flag:
            return kind
    return None


def allows(allow_hosts: list[str], host: str, port: int) -> bool:
    """Whether the repository's allow-list names ``host`` (on ``port``, or on any port)."""
    host = host.lower().rstrip(".")
    for entry in allow_hosts:
        try:
            listed, listed_port = parse_allow_host(entry)
        except ValueError:
            continue
        if listed == host and listed_port in (None, port):
            return True
    return False


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, lower-case host, port) of an http(s) URL."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower().rstrip("."), port


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (an IP literal: itself); OSError when none."""
    if _is_ip(host):
        return [host]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def blocked_reason(host: str, port: int, addresses: list[str], allow_hosts: list[str]) -> str:
    """Why connecting to ``host`` at ``addresses`` is refused ("" when it is allowed)."""
    if allows(allow_hosts, host, port):
        return ""
    for address in addresses:
        if kind := address_kind(address):
            return TARGET_URL_PRIVATE.format(host=host, kind=kind)
    return ""


def resolved(url: str) -> tuple[str, int, list[str]] | None:
    """The host and port of ``url`` (a valid URL) and the addresses the name resolves to now;
    None for no URL or a name that does not resolve here."""
    if not url:
        return None
    _scheme, host, port = origin(url)
    try:
        return host, port, resolve(host, port)
    except (OSError, UnicodeError):
        return None


def target_address_problem(url: str, allow_hosts: list[str]) -> str | None:
    """Why the tests could not be let through to ``url`` (a valid target URL), or None. A name
    that does not resolve here is left to the verifier, which resolves it again."""
    found = resolved(url)
    return (blocked_reason(*found, allow_hosts) or None) if found else None


def display(url: str) -> str:
    """``url`` as it may be printed: without its query string (tokens travel there)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}" if parts.scheme else ""
