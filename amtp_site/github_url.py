"""Where GitHub's REST API lives, checked before anything calls it.

- github.com: ``https://api.github.com``, no path.
- GitHub Enterprise Cloud with data residency: ``https://api.SUBDOMAIN.ghe.com``, no path
  (github/docs: admin/data-residency/about-github-enterprise-cloud-with-data-residency).
- GitHub Enterprise Server: ``http(s)://HOSTNAME/api/v3`` — "These endpoints ... are prefixed
  with the following URL: http(s)://HOSTNAME/api/v3" (docs.github.com/enterprise-server
  rest/enterprise-admin, "Endpoint URLs"); the prefix is not configurable
  (github.com/orgs/community/discussions/24365). Without it, a GHES host answers the web UI's
  HTML, which an API client reports as a confusing 404.
- A loopback address is a local stand-in (a proxy, a test double): taken as given.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from amtp_site.errors import ConfigurationError

DEFAULT = "https://api.github.com"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SET_IT = "GITHUB_API_URL={given!r} {problem}: set GITHUB_API_URL={fix}"
NOT_A_URL = "is not an http(s) URL"
NO_CREDENTIALS = "carries credentials; put the token in GITHUB_TOKEN instead"
DOTCOM = "is the github.com API, which has no path"
GHE_COM = "is GitHub Enterprise Cloud with data residency, whose API is api.SUBDOMAIN.ghe.com"
GHES = "names a GitHub Enterprise Server, which serves its REST API under /api/v3"


def check_github_api_url(url: str) -> str:
    """``url`` without a trailing slash, or ConfigurationError saying what to set instead."""
    given = url
    parts = urlsplit(url.strip())
    host, path = (parts.hostname or "").lower(), parts.path.rstrip("/")
    root = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

    def refuse(problem: str, fix: str) -> ConfigurationError:
        return ConfigurationError(SET_IT.format(given=given, problem=problem, fix=fix))

    if parts.scheme not in ("http", "https") or not host:
        raise refuse(NOT_A_URL, DEFAULT + " (or https://HOSTNAME/api/v3 for GitHub Enterprise)")
    if parts.username or parts.password:
        raise refuse(NO_CREDENTIALS, f"{root}{path}")
    if host in LOOPBACK:
        return f"{root}{path}"
    if host in ("github.com", "www.github.com", "api.github.com"):
        if host != "api.github.com" or path:
            raise refuse(DOTCOM, DEFAULT)
    elif host.endswith(".ghe.com"):
        tenant = host.removeprefix("api.")
        if not host.startswith("api.") or path:
            raise refuse(GHE_COM, f"https://api.{tenant}")
    elif path != "/api/v3":
        raise refuse(GHES, f"{root}/api/v3")
    return f"{root}{path}"
