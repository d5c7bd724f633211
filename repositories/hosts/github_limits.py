"""How long to wait after GitHub's rate limits, by GitHub's rules.

docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit:
"If the retry-after response header is present, you should not retry your request until after
that many seconds has elapsed. If the x-ratelimit-remaining header is 0, you should not retry
your request until after the time, in UTC epoch seconds, specified by the x-ratelimit-reset
header. Otherwise, wait for at least one minute before retrying. If your request continues to
fail due to a secondary rate limit, wait for an exponentially increasing amount of time between
retries, and throw an error after a specific number of retries." (Temporal's maximum attempts
are that number.)

A secondary limit counts against the credential, not the process, and each CreatePullRequest
attempt runs in a fresh process; so the repeats ("strikes") are counted in Valkey, shared by
every worker, and forgotten once a retry's wait has passed quietly. Without Valkey (a host used
outside Django) they are counted in the process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Protocol

import redis

AT_LEAST = 60  # "wait for at least one minute"
LONGEST = 3600  # an hour: the primary limit's own window; the exponential wait stops there
QUIET = 600  # strikes are forgotten this long after the last wait was due


class Strikes(Protocol):
    def strike(self, key: str, ttl_for: Callable[[int], int]) -> int:
        """Count one more secondary limit for ``key``: the count so far (1 for the first),
        remembered for ``ttl_for(count)`` seconds."""


class LocalStrikes:
    """Strikes counted in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, float]] = {}

    def strike(self, key: str, ttl_for: Callable[[int], int]) -> int:
        with self._lock:
            count, until = self._counts.get(key, (0, 0.0))
            count = count + 1 if until > time.monotonic() else 1
            self._counts[key] = (count, time.monotonic() + ttl_for(count))
            return count


class ValkeyStrikes:
    """Strikes shared by every process through Valkey (``amtp:gh:secondary:{credential}``)."""

    def __init__(self, client_factory, fallback: Strikes | None = None) -> None:
        self._client = client_factory
        self._fallback = fallback or PROCESS_STRIKES

    def strike(self, key: str, ttl_for: Callable[[int], int]) -> int:
        name = f"amtp:gh:secondary:{key}"
        try:
            client = self._client()
            with client.pipeline() as pipe:  # the longest TTL first, so no key outlives it
                count, _ = pipe.incr(name).expire(name, LONGEST + QUIET).execute()
            client.expire(name, ttl_for(int(count)))
            return int(count)
        except redis.RedisError:  # Valkey down: count here rather than not at all
            return self._fallback.strike(key, ttl_for)


PROCESS_STRIKES = LocalStrikes()


def credential_key(api_url: str, identity: str) -> str:
    """A name for one credential on one GitHub, without the secret in it."""
    return hashlib.sha256(f"{api_url}\n{identity}".encode()).hexdigest()[:24]


def header_wait(headers: dict[str, str]) -> int | None:
    """Seconds GitHub's headers ask for: retry-after, else the reset time when none remain."""
    if headers.get("retry-after", "").strip().isdigit():
        return max(int(headers["retry-after"]), 1)
    reset = headers.get("x-ratelimit-reset", "").strip()
    if headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        return max(int(reset) - int(time.time()), 1)
    return None


def rate_limit_wait(headers: dict[str, str], *, secondary: bool, strikes: int) -> int:
    """The wait for this answer: the headers' (or a minute), doubled per repeated secondary
    limit, never past an hour unless the headers themselves ask for longer."""
    asked = header_wait(headers)
    if not secondary:
        return asked or AT_LEAST
    base = asked or AT_LEAST
    grown = min(base * 2 ** max(strikes - 1, 0), max(LONGEST, base))
    return max(grown, base)
