"""``GET /metrics``: django-prometheus's request, database and cache metrics, AMTP's own
(:mod:`amtp_site.metrics`) and the runs waiting to start, for the addresses and the token the
settings allow.

Access (``AMTP_METRICS_*``): a request carrying ``Authorization: Bearer …`` is let in when
the token is ``AMTP_METRICS_TOKEN`` and refused otherwise, from whatever address; one without
must come from an address in ``AMTP_METRICS_ALLOWED_CIDRS`` (default: loopback only). The
address is the connection's, unless it is a proxy named in ``AMTP_METRICS_TRUSTED_PROXIES``:
then it is the last ``X-Forwarded-For`` entry that is not a trusted proxy (entries further
left are the client's own to write, so they are never believed).
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from amtp_site import metrics

WRONG_TOKEN = "/metrics: the bearer token is not AMTP_METRICS_TOKEN\n"
NOT_ALLOWED = (
    "/metrics: address {address} is not in AMTP_METRICS_ALLOWED_CIDRS; scrape from an allowed "
    "address, or send Authorization: Bearer <AMTP_METRICS_TOKEN>\n"
)


def _networks(cidrs: list[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr, strict=False) for cidr in cidrs]


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    return getattr(address, "ipv4_mapped", None) or address


def _within(address, networks) -> bool:
    return address is not None and any(address in network for network in networks)


def client_address(request: HttpRequest):
    """The client's address: the connection's, or what trusted proxies say it is."""
    address = _address(request.META.get("REMOTE_ADDR", ""))
    proxies = _networks(settings.AMTP_METRICS_TRUSTED_PROXIES)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
    while _within(address, proxies) and forwarded:
        address = _address(forwarded.pop())
    return address


def refusal(request: HttpRequest) -> str | None:
    """Why ``request`` may not read the metrics, or None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, token = header.partition(" ")
        expected = settings.AMTP_METRICS_TOKEN
        good = (
            scheme.lower() == "bearer"
            and expected
            and hmac.compare_digest(token.strip().encode(), expected.encode())
        )
        return None if good else WRONG_TOKEN
    address = client_address(request)
    if _within(address, _networks(settings.AMTP_METRICS_ALLOWED_CIDRS)):
        return None
    return NOT_ALLOWED.format(address=address or "(unknown)")


def metrics_view(request: HttpRequest) -> HttpResponse:
    if problem := refusal(request):
        return HttpResponse(problem, status=403, content_type="text/plain; charset=utf-8")
    waiting = CollectorRegistry()
    waiting.register(metrics.WaitingRuns())
    body = generate_latest(metrics.registry()) + generate_latest(waiting)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
