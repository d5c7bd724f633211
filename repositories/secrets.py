"""What of a repository never reaches an agent, an LLM vendor, an artifact or the cache.

Two layers, both applied by the reader behind ``amtp-github-mcp``:

- files whose purpose is to hold credentials are not listed by ``repo.tree`` and
  ``repo.read_file`` refuses them (:func:`is_secret_path`): environment files, key material,
  keystores, client configurations that carry tokens (``.npmrc``, ``.pypirc``, ``.s3cfg``,
  ``kubeconfig`` ...), anything under ``.ssh/``, ``.aws/`` and the like, and any *data* file
  whose name says ``secret`` or ``credential`` (``secrets.yaml``, ``credentials.json``).
  A backup suffix (``server.key.bak``) does not hide a name. Source code and documentation
  named that way (``src/secrets.ts``, ``secret_santa.py``, ``docs/credentials.md``) stay
  readable: a helper that reads secrets is code the tests may need to understand, and its
  content is redacted like every other file's. The name decides; so a key pasted into a
  ``.py`` file is the second layer's job.
- in every other file, values that look like credentials are replaced in place by
  ``[REDACTED:<kind>]`` before the text is cached or returned (:func:`redact`), so a human
  reading an artifact sees that something was removed, and what kind of thing it was.
  The kinds are gitleaks' rule ids (its maintained rule set, :mod:`repositories.gitleaks`:
  ``github-pat``, ``stripe-access-token``, ``generic-api-key`` ...) and four rules of our own
  for what it leaves out: a private key block even when cut before its END line, a password
  in a URL, an ``Authorization`` header, and a random-looking value assigned to a name that
  says it is secret (punctuation, ``DB_PASS``, ``passphrase``, PHP's ``define('X', 'v')``).

The rules err on the side of redacting: a test generator never needs a credential's value.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from fnmatch import translate
from urllib.parse import quote, quote_plus

from django.conf import settings

from repositories.gitleaks import RULES, entropy

SECRET_FILE = (
    "{path!r} may hold credentials (secret files such as .env, keys, certificates and "
    "credential files are never read); it is not available to agents"
)
MARKER = "[REDACTED:{kind}]"

SECRET_DIRS = frozenset({".ssh", ".aws", ".azure", ".gnupg", ".docker", ".kube", ".gcloud"})
SECRET_NAMES = (
    # environment files
    ".env*",
    "*.env",
    ".dev.vars",
    # key material and keystores
    "*.pem",
    "*.key",
    "*.der",
    "*.p12",
    "*.pfx",
    "*.p8",
    "*.pk8",
    "*.ppk",
    "*.jks",
    "*.jceks",
    "*.keystore",
    "*.kdbx",
    "*.ovpn",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    # client configurations that carry tokens or passwords
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".htpasswd",
    ".dockercfg",
    ".s3cfg",
    ".boto",
    ".vault-token",
    ".terraformrc",
    "terraform.rc",
    "kubeconfig*",
    "*.kubeconfig",
    "*service-account*.json",
    "*service_account*.json",
    # infrastructure state and variables
    "*.tfvars",
    "*.tfstate",
    "*.tfstate.backup",
)
# Any name holding one of these words is refused, unless it is source code or documentation.
SECRET_WORDS = re.compile(r"secret|credential")
READABLE_EXTENSIONS = tuple(
    "." + extension
    for extension in (
        "py pyi js jsx mjs cjs ts tsx mts cts vue svelte go rb java kt scala rs php cs swift c h "
        "cc cpp hpp ex exs erl clj dart lua pl sh sql md rst adoc html css scss"
    ).split()
)
BACKUP_SUFFIX = re.compile(r"(?:\.(?:bak|old|orig|backup|save|swp|tmp|copy)|~)+$")
# One pattern for them all, compiled once (in the agent process template) rather than one
# fnmatch pattern per name compiled in each agent process that checks a path.
_SECRET_NAME = re.compile("|".join(translate(name) for name in SECRET_NAMES))


def is_secret_path(path: str) -> bool:
    """True for a file that exists to hold credentials (matched case-insensitively)."""
    parts = path.lower().split("/")
    if any(part in SECRET_DIRS for part in parts[:-1]):
        return True
    name = BACKUP_SUFFIX.sub("", parts[-1]) or parts[-1]
    if _SECRET_NAME.match(name) or _SECRET_NAME.match(parts[-1]):
        return True
    return SECRET_WORDS.search(name) is not None and not name.endswith(READABLE_EXTENSIONS)


# --- values ----------------------------------------------------------------------------------

# Our own rules, for what gitleaks' set leaves out. Each runs where its keyword occurs (in
# the lowered text; None: everywhere) and names the span of the secret, or None to keep it.
_PRIVATE_KEY = re.compile(
    # to the END line, or to the end of a text cut before it (a read stops at a size limit)
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    re.DOTALL,
)
_URL_PASSWORD = re.compile(r"://[^/\s:@'\"`]+:(?P<value>[^/\s@'\"`$<{]+)@")


def _anycase(word: str) -> str:
    """``word`` in any case, as classes: ``re`` skips ahead to a class or a literal that starts
    a pattern, but tries a pattern that starts with ``(?i)`` at every position (8× slower)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


_AUTHORIZATION = re.compile(
    _anycase("authorization") + r"[\"']?\s*[:=]\s*[\"']?(?i:(?P<scheme>basic|bearer|token|digest))?"
    r"\s*(?P<value>[A-Za-z0-9+/=._~-]{8,})"
)
# ``password = "..."``, ``"apiKey": "..."``, ``DB_PASS=...``, ``define('DB_PASSWORD', '...')``:
# any token assigned a value, kept unless the token's name says secret and the value looks
# random (see _looks_random), so code reading a secret from elsewhere is left alone. The
# token is matched whole from its start (a lookbehind): matching a keyword anywhere inside an
# unanchored ``[\w.-]*`` made one 60 kB line of a minified file cost quadratic time, long
# enough to hang a crawl. A quoted value may hold spaces (a passphrase).
_SECRET_NAME_WORD = re.compile(
    r"(?i)secret|passw(?:or)?d|pass(?:phrase)?(?![a-z])|pwd|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|auth[_-]?key|credentials?"
)
_VALUE = (
    r"""(?:(?P<q>["'`])(?P<quoted>[^"'`\n]*? [^"'`\n]*)(?P=q)|["'`]?(?P<value>[^\s"'`,;]{8,}))"""
)
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(?P<name>[\w.-]{1,128}+)["']?\s*(?:=>|:=|=|:)\s*""" + _VALUE
)
_PHP_DEFINE = re.compile(
    _anycase("define") + r"""\(\s*["'](?P<name>[\w.-]{1,128})["']\s*,\s*""" + _VALUE
)
_REFERENCE = re.compile(r"^(?:\$|%|<|\{|\[|process\.|os\.|env\.|ENV\[|settings\.|config\.)")


def _looks_random(value: str) -> bool:
    if _REFERENCE.match(value) or "(" in value or value.startswith("[REDACTED:"):
        return False
    score = entropy(value.encode())
    mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    return (mixed and score >= 3.0) or (len(value) >= 20 and score >= 4.0)


def _assigned_secret(match: re.Match) -> tuple[int, int] | None:
    group = "quoted" if match.group("quoted") is not None else "value"
    if _SECRET_NAME_WORD.search(match.group("name")) and _looks_random(match.group(group)):
        return match.span(group)
    return None


def _basic_credentials(value: str) -> bool:
    """A Basic header's value: base64 of ``user:password``."""
    try:
        return b":" in base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False


def _header_secret(match: re.Match) -> tuple[int, int] | None:
    value = match.group("value")
    basic = (match.group("scheme") or "").lower() == "basic" and _basic_credentials(value)
    return match.span("value") if basic or _looks_random(value) else None


# (rank, kind, keyword, pattern, span): where findings overlap, the lowest rank names the kind;
# gitleaks' provider rules rank 1 and its generic rule 4 (see _gitleaks_rank).
_OWN_RULES = [
    (0, "private-key", "private key", _PRIVATE_KEY, lambda m: m.span()),
    (2, "url-password", "://", _URL_PASSWORD, lambda m: m.span("value")),
    (3, "authorization-header", "authorization", _AUTHORIZATION, _header_secret),
    (5, "secret-assignment", None, _ASSIGNMENT, _assigned_secret),
    (5, "secret-assignment", "define(", _PHP_DEFINE, _assigned_secret),
]


def _gitleaks_rank(rule_id: str) -> int:
    return 4 if rule_id.startswith("generic") else 1


def _char_offsets(text: str, data: bytes, offsets: set[int]) -> dict[int, int]:
    """Byte offsets into ``data`` (``text`` in UTF-8) as offsets into ``text``."""
    if len(data) == len(text):
        return {offset: offset for offset in offsets}
    found, byte, char = {}, 0, 0
    for offset in sorted(offsets):
        char += len(data[byte:offset].decode("utf-8", errors="surrogatepass"))
        byte, found[offset] = offset, char
    return found


def _findings(text: str) -> list[tuple[int, int, int, str]]:
    """``(start, end, rank, kind)`` of every secret the rules find in ``text``."""
    data = text.encode("utf-8", errors="surrogatepass")
    leaks = list(RULES.findings(data))
    chars = _char_offsets(text, data, {o for start, end, _ in leaks for o in (start, end)})
    found = [(chars[s], chars[e], _gitleaks_rank(rule), rule) for s, e, rule in leaks]
    lowered = text.lower()
    for rank, kind, keyword, pattern, secret_span in _OWN_RULES:
        if keyword is None or keyword in lowered:
            spans = (secret_span(match) for match in pattern.finditer(text))
            found.extend((*span, rank, kind) for span in spans if span)
    return found


def redact(text: str) -> str:
    """``text`` with every secret-looking value replaced by ``[REDACTED:<kind>]``."""
    merged: list[list] = []  # [start, end, rank, kind]: overlapping findings become one
    for start, end, rank, kind in sorted(_findings(text)):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if rank < last[2]:
                last[2:] = [rank, kind]
        else:
            merged.append([start, end, rank, kind])
    pieces, done = [], 0
    for start, end, _, kind in merged:
        pieces += [text[done:start], MARKER.format(kind=kind)]
        done = end
    return "".join([*pieces, text[done:]])


# Names of this process's variables that carry credentials: their values are scrubbed wherever
# text from generated code leaves verification, even where they look like nothing special.
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|_URL$|DSN", re.I)
MIN_SCRUBBED = 8  # shorter values would scrub ordinary words


# Values a stage holds for a while (a preview's login credentials): scrubbed whatever their
# length, in this thread only (each activity thread starts with its own context).
_ALSO: ContextVar[tuple[str, ...]] = ContextVar("amtp_also_scrubbed", default=())


MIN_ENCODED = 6  # a shorter slice of an encoding would scrub ordinary text


def written_forms(value: str) -> set[str]:
    """``value`` as code that read it may write it: as typed, lower- and upper-cased,
    URL-encoded, inside a JSON string, in hex, and in base64 (standard and URL-safe) at each
    of the three alignments it can have inside a longer encoded text (only the characters
    that depend on ``value`` alone)."""
    raw = value.encode("utf-8")
    forms = {value, value.lower(), value.upper(), quote(value, safe=""), quote_plus(value)}
    forms |= {json.dumps(value)[1:-1], raw.hex(), raw.hex().upper()}
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw).decode().rstrip("=")
        own = encoded[-(-8 * shift // 6) : 8 * (shift + len(raw)) // 6]
        forms |= {own, own.replace("+", "-").replace("/", "_")}
    return {f for f in forms if f == value or len(f) >= MIN_ENCODED}


@contextlib.contextmanager
def also_scrubbed(values: list[str]) -> Iterator[None]:
    """Within the block, :func:`scrub` also removes ``values``, in every written form."""
    forms = {form for v in values if v for form in written_forms(v)}
    token = _ALSO.set((*_ALSO.get(), *forms))
    try:
        yield
    finally:
        _ALSO.reset(token)


def stage_secrets() -> tuple[str, ...]:
    """The values of the enclosing :func:`also_scrubbed` blocks (each in its written forms)."""
    return _ALSO.get()


def held_secrets() -> list[str]:
    """The credential values this process holds (environment and settings, and those of
    :func:`also_scrubbed`), longest first."""
    values = {v for k, v in os.environ.items() if _SECRET_ENV.search(k)}
    values.add(str(getattr(settings, "SECRET_KEY", "")))
    for database in getattr(settings, "DATABASES", {}).values():
        values.add(str(database.get("PASSWORD") or ""))
    for value in list(values):
        values.update(re.findall(r"://[^:/@\s]*:([^@/\s]+)@", value))  # a URL's password
    held = {v for v in values if len(v) >= MIN_SCRUBBED} | set(_ALSO.get())
    return sorted(held, key=len, reverse=True)


def scrub(text: str) -> str:
    """``text`` with every held credential removed and secret-looking values redacted (held
    values first: a redaction inside one would leave the rest of it)."""
    for value in held_secrets():
        if value in text:
            text = text.replace(value, MARKER.format(kind="held-secret"))
    return redact(text)


class ScrubbingFilter(logging.Filter):
    """A log handler's filter: the message and the traceback :func:`scrub`-bed before the
    line is written (``AMTP_LOG_JSON``'s handler, amtp_site.logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True
