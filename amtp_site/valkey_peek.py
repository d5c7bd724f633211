"""A read-only look at a repository's run window (``amtp:rl:repo:{repo}:runs``).

``amtp_site.valkey.rate_limit_check`` is the workflow's check: it trims the window and adds
the run. The API must answer 429 *before* creating a run, without taking a slot or trimming,
so it counts the members still inside the window with the same clock (Valkey's ``TIME``) and
the same boundary (a member scored ``now - window`` or earlier has left the window).
"""

from __future__ import annotations

from amtp_site.valkey import WindowDecision, client, window_key

# Returns {count inside the window, seconds until one more run would be allowed (0 if now)}.
_PEEK = """
local now = tonumber(redis.call("TIME")[1])
local window, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local floor = "(" .. (now - window)
local count = redis.call("ZCOUNT", KEYS[1], floor, "+inf")
if count < limit then
  return {count, 0}
end
local blocking = redis.call("ZRANGEBYSCORE", KEYS[1], floor, "+inf", "WITHSCORES",
                            "LIMIT", count - limit, 1)
return {count, math.max(1, tonumber(blocking[2]) + window - now)}
"""


def window_peek(repo: str, *, limit: int, window_seconds: int, conn=None) -> WindowDecision:
    """Would one more run of ``repo`` fit in its window right now? Changes nothing."""
    conn = conn or client()
    count, retry_after = conn.eval_ro(_PEEK, 1, window_key(repo), window_seconds, limit)
    return WindowDecision(int(count) < limit, int(count), int(retry_after))
