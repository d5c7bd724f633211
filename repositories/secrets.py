"""What of a repository never reaches an agent, an LLM vendor, an artifact or the cache.

Two layers, both applied by the reader behind ``amtp-github-mcp``:

- files whose purpose is to hold credentials (``.env*``, keys, certificates, credential files,
  keystores, anything under ``.ssh/`` or ``.aws/``) are not listed by ``repo.tree`` and
  ``repo.read_file`` refuses them (:func:`is_secret_path`);
- in every other file, values that look like credentials are replaced in place by
  ``[REDACTED:<kind>]`` before the text is cached or returned (:func:`redact`), so a human
  reading an artifact sees that something was removed, and what kind of thing it was.

The rules err on the side of redacting: a test generator never needs a credential's value.
"""

from __future__ import annotations

import math
import os
import re
from fnmatch import translate

from django.conf import settings

SECRET_FILE = (
    "{path!r} may hold credentials (secret files such as .env, keys, certificates and "
    "credential files are never read); it is not available to agents"
)
MARKER = "[REDACTED:{kind}]"

SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".docker", ".kube"})
SECRET_NAMES = (
    ".env",
    ".env.*",
    ".envrc",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    ".dockercfg",
    "*.p12",
    "*.pfx",
    "*.p8",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.ppk",
    "*.tfvars",
    "*.tfstate",
    "*.tfstate.backup",
)
# One pattern for them all, compiled once (in the agent process template) rather than 28
# fnmatch patterns compiled in each agent process that checks a path.
_SECRET_NAME = re.compile("|".join(translate(name) for name in SECRET_NAMES))


def is_secret_path(path: str) -> bool:
    """True for a file that exists to hold credentials (matched case-insensitively)."""
    parts = path.lower().split("/")
    if any(part in SECRET_DIRS for part in parts[:-1]):
        return True
    return _SECRET_NAME.match(parts[-1]) is not None


# --- values ----------------------------------------------------------------------------------

# (kind, pattern): the whole match is the secret, except where a group named ``value`` is.
VALUE_RULES = [
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36,}"),
    ("llm-api-key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("url-password", r"://[^/\s:@'\"`]+:(?P<value>[^/\s@'\"`$<{]+)@"),
]
_COMPILED = [(kind, re.compile(pattern, re.DOTALL)) for kind, pattern in VALUE_RULES]

# ``password = "..."``, ``"apiKey": "..."``, ``JWT_SECRET=...``: the value is redacted when it
# looks random (see _looks_random), so code reading a secret from elsewhere is left alone.
# The name starts a token and its parts are bounded: an unanchored ``[\w.-]*`` made a long
# token (one 60 kB line of a minified file) cost quadratic time, long enough to hang a crawl.
_ASSIGNMENT = re.compile(
    r"(?i)(?<![\w.-])[\w.-]{0,64}?(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|auth[_-]?key|credentials?)[\w.-]{0,64}[\"']?\s*(?:=>|:=|=|:)\s*[\"'`]?"
    r"(?P<value>[^\s\"'`,;]{8,})"
)
_REFERENCE = re.compile(r"^(?:\$|%|<|\{|\[|process\.|os\.|env\.|ENV\[|settings\.|config\.)")


def _entropy(value: str) -> float:
    counts = {c: value.count(c) for c in set(value)}
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_random(value: str) -> bool:
    if _REFERENCE.match(value) or "(" in value or value.startswith("[REDACTED:"):
        return False
    mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return (mixed and _entropy(value) >= 3.0) or (len(value) >= 20 and _entropy(value) >= 4.0)


def _replace(text: str, kind: str, pattern: re.Pattern, keep=lambda value: False) -> str:
    def sub(match: re.Match) -> str:
        if "value" not in pattern.groupindex:
            return MARKER.format(kind=kind)
        if keep(match.group("value")):
            return match.group(0)
        start, end = match.span("value")
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + MARKER.format(kind=kind) + whole[end - offset :]

    return pattern.sub(sub, text)


def redact(text: str) -> str:
    """``text`` with every secret-looking value replaced by ``[REDACTED:<kind>]``."""
    for kind, pattern in _COMPILED:
        text = _replace(text, kind, pattern)
    return _replace(text, "secret-assignment", _ASSIGNMENT, keep=lambda v: not _looks_random(v))


# Names of this process's variables that carry credentials: their values are scrubbed wherever
# text from generated code leaves verification, even where they look like nothing special.
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|_URL$|DSN", re.I)
MIN_SCRUBBED = 8  # shorter values would scrub ordinary words


def held_secrets() -> list[str]:
    """The credential values this process holds (environment and settings), longest first."""
    values = {v for k, v in os.environ.items() if _SECRET_ENV.search(k)}
    values.add(str(getattr(settings, "SECRET_KEY", "")))
    for database in getattr(settings, "DATABASES", {}).values():
        values.add(str(database.get("PASSWORD") or ""))
    for value in list(values):
        values.update(re.findall(r"://[^:/@\s]*:([^@/\s]+)@", value))  # a URL's password
    return sorted((v for v in values if len(v) >= MIN_SCRUBBED), key=len, reverse=True)


def scrub(text: str) -> str:
    """``text`` with secret-looking values redacted and every held credential removed."""
    text = redact(text)
    for value in held_secrets():
        if value in text:
            text = text.replace(value, MARKER.format(kind="held-secret"))
    return text
