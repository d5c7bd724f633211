"""Valkey: cache, locks and limits only (every key is listed in infra/valkey/NAMESPACES.md).

Losing Valkey loses nothing else: handoffs live in PostgreSQL, a lost ``pr_lock`` cannot
produce a second PR (head branches derive from the run id and an existing ref is adopted),
a lost window or counter only relaxes a limit for a while.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import redis
from django.conf import settings
from redis.driver_info import DriverInfo

from amtp_site.errors import RepoPrLockContended

PR_LOCK_TTL = 120
CONCURRENCY_TTL = 3600


def client() -> redis.Redis:
    return _client_for(settings.VALKEY_URL)


@cache
def _client_for(url: str) -> redis.Redis:
    # One connection pool per URL and process, not one per call (the client is thread-safe).
    # The version it tells the server (CLIENT SETINFO) is given, not looked up in the
    # installed packages' metadata for every new connection (~3 ms each, a fresh agent
    # process's first Valkey call).
    return redis.Redis.from_url(
        url,
        socket_timeout=5,
        socket_connect_timeout=5,
        driver_info=DriverInfo(lib_version=redis.__version__),
    )


def pr_lock_key(repo: str) -> str:
    return f"amtp:rl:repo:{repo}:pr_lock"


def window_key(repo: str) -> str:
    return f"amtp:rl:repo:{repo}:runs"


def concurrency_key(repo: str) -> str:
    # A sorted set of run ids scored by lease end: a run is counted once, and a lost release
    # expires with its lease.
    return f"amtp:rl:repo:{repo}:running"


# Take the lock, or take over this run's own, atomically (no GET-then-SET race with another
# run taking an expired lock); returns the holder, ARGV[1] when it is ours.
_ACQUIRE = """
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return ARGV[1] end
local holder = redis.call("GET", KEYS[1])
if holder == ARGV[1] then redis.call("PEXPIRE", KEYS[1], ARGV[2]) end
return holder
"""
# Renew the lease only while the lock is ours.
_RENEW = """
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
"""

# Only the holder may release: compare the token, then delete, in one step.
_RELEASE = """
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
else
  return 0
end
"""

# Sliding window. Member = run id, so a replayed check for the same run is not counted twice.
# Returns {allowed (0/1), count, retry_after_seconds}. Time is Valkey's, so web and worker
# clocks cannot disagree.
_WINDOW = """
local now = tonumber(redis.call("TIME")[1])
local window, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - window)
if redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  return {1, redis.call("ZCARD", KEYS[1]), 0}
end
local count = redis.call("ZCARD", KEYS[1])
if count >= limit then
  local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
  return {0, count, math.max(1, tonumber(oldest[2]) + window - now)}
end
redis.call("ZADD", KEYS[1], now, ARGV[1])
redis.call("EXPIRE", KEYS[1], window)
return {1, count + 1, 0}
"""

# The runs in progress per repository: a sorted set of run ids scored by the end of their
# lease (Valkey time). A member leaves when its run releases it or when its lease ends, so a
# release that never comes (or comes after the lease) cannot leave the count too high, and
# counting or adding never extends another run's lease. The key itself expires with the
# longest lease. Returns the count with this run; above ``limit`` the run was not added.
_TAKE = """
local time = redis.call("TIME")
local now = tonumber(time[1]) + tonumber(time[2]) / 1e6
local lease, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
local count = redis.call("ZCARD", KEYS[1])
local held = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not held then
  if limit >= 0 and count >= limit then return count + 1 end
  count = count + 1
end
redis.call("ZADD", KEYS[1], now + lease, ARGV[1])
if redis.call("TTL", KEYS[1]) < lease then redis.call("EXPIRE", KEYS[1], math.ceil(lease)) end
return count
"""
_MEMBERS = """
local time = redis.call("TIME")
local now = tonumber(time[1]) + tonumber(time[2]) / 1e6
return redis.call("ZRANGEBYSCORE", KEYS[1], "(" .. now, "+inf")
"""


@dataclass(frozen=True)
class WindowDecision:
    allowed: bool
    count: int
    retry_after: int


def rate_limit_check(
    repo: str, run_id: str, *, limit: int, window_seconds: int, conn=None
) -> WindowDecision:
    conn = conn or client()
    allowed, count, retry_after = conn.eval(
        _WINDOW, 1, window_key(repo), run_id, window_seconds, limit
    )
    return WindowDecision(bool(allowed), int(count), int(retry_after))


def window_forget(repo: str, run_id: str, conn=None) -> None:
    (conn or client()).zrem(window_key(repo), run_id)


def concurrency_incr(
    repo: str, run_id: str, *, limit: int | None = None, lease: int = CONCURRENCY_TTL, conn=None
) -> int:
    """Count ``run_id`` among ``repo``'s runs in progress for ``lease`` seconds (again: its
    lease starts over) unless that would exceed ``limit``; the count with it either way."""
    conn = conn or client()
    return int(
        conn.eval(
            _TAKE, 1, concurrency_key(repo), run_id, int(lease), -1 if limit is None else limit
        )
    )


def concurrency_decr(repo: str, run_id: str, conn=None) -> int:
    """Release ``run_id``'s place (once; a second release is a no-op); the count left."""
    conn = conn or client()
    conn.zrem(concurrency_key(repo), run_id)
    return concurrency_count(repo, conn)


def concurrency_count(repo: str, conn=None) -> int:
    return len(concurrency_members(repo, conn))


def concurrency_members(repo: str, conn=None) -> list[str]:
    """The run ids counted now (leases not over), soonest lease end first."""
    conn = conn or client()
    return [m.decode() for m in conn.eval_ro(_MEMBERS, 1, concurrency_key(repo))]


@contextmanager
def pr_lock(repo: str, run_id: str, conn=None, *, ttl: float = PR_LOCK_TTL) -> Iterator[None]:
    """``SET amtp:rl:repo:{repo}:pr_lock {run_id} NX PX``, or take over this run's own lock (an
    attempt that crashed holding it), in one step; renewed every third of ``ttl`` while held,
    so a slow holder keeps it; compare-and-delete release in ``finally``."""
    conn = conn or client()
    key, ms = pr_lock_key(repo), int(ttl * 1000)
    holder = conn.eval(_ACQUIRE, 1, key, run_id, ms)
    holder = holder.decode() if isinstance(holder, bytes) else holder
    if holder != run_id:
        raise RepoPrLockContended(
            f"another run ({holder}) is opening a pull request on {repo}; retrying with backoff",
            repo=repo,
            holder=holder,
        )
    released = threading.Event()
    renewal = threading.Thread(
        target=_renew, args=(conn, key, run_id, ms, released), daemon=True, name="pr-lock"
    )
    renewal.start()
    try:
        yield
    finally:
        released.set()
        renewal.join()
        release_pr_lock(repo, run_id, conn)


def _renew(conn, key: str, run_id: str, ms: int, released: threading.Event) -> None:
    while not released.wait(ms / 3000):
        try:
            if not conn.eval(_RENEW, 1, key, run_id, ms):
                return  # not ours any more (Valkey lost it): a lost lock stays lost
        except redis.RedisError:
            continue  # Valkey away for a moment: the next renewal may reach it


def release_pr_lock(repo: str, run_id: str, conn=None) -> bool:
    conn = conn or client()
    return bool(conn.eval(_RELEASE, 1, pr_lock_key(repo), run_id))


def oidc_jti_key(issuer: str, jti: str) -> str:
    # A digest: ``jti`` is the caller's text (any length, any bytes); the key's length is fixed.
    digest = hashlib.sha256(f"{issuer}\0{jti}".encode()).hexdigest()
    return f"amtp:oidc:jti:{digest}"


def oidc_jti_first_use(issuer: str, jti: str, ttl_ms: int, conn=None) -> bool:
    """True the first time this token id of ``issuer`` is seen (``SET NX`` kept for the token's
    remaining lifetime: after that, ``exp`` refuses it anyway); False for a replay."""
    conn = conn or client()
    return bool(conn.set(oidc_jti_key(issuer, jti), "1", nx=True, px=max(ttl_ms, 1000)))
