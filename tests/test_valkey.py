"""Rate limit, concurrency and pr_lock primitives against the real Valkey."""

import threading
import time

import pytest

from amtp_site import valkey as valkey_mod
from amtp_site.errors import RepoPrLockContended

REPO = "acme/web"


def test_sliding_window_counts_each_run_once_and_says_when_to_retry(valkey):
    decide = lambda run: valkey_mod.rate_limit_check(REPO, run, limit=2, window_seconds=60)  # noqa: E731
    assert decide("run-1").allowed and decide("run-1").count == 1  # replay: not counted twice
    assert decide("run-2").count == 2
    refused = decide("run-3")
    assert not refused.allowed and refused.count == 2 and 1 <= refused.retry_after <= 60
    assert decide("run-2").allowed  # an admitted run's replay is still admitted
    assert valkey.zcard(valkey_mod.window_key(REPO)) == 2
    assert 0 < valkey.ttl(valkey_mod.window_key(REPO)) <= 60


def test_window_slides(valkey):
    assert valkey_mod.rate_limit_check(REPO, "a", limit=1, window_seconds=1).allowed
    assert not valkey_mod.rate_limit_check(REPO, "b", limit=1, window_seconds=1).allowed
    time.sleep(2.1)
    assert valkey_mod.rate_limit_check(REPO, "b", limit=1, window_seconds=1).allowed


def test_concurrency_incr_decr_is_idempotent_per_run_with_expire_safety_net(valkey):
    assert valkey_mod.concurrency_incr(REPO, "r1") == 1
    assert valkey_mod.concurrency_incr(REPO, "r1") == 1  # retried activity
    assert valkey_mod.concurrency_incr(REPO, "r2") == 2
    assert 3500 < valkey.ttl(valkey_mod.concurrency_key(REPO)) <= 3600
    assert valkey_mod.concurrency_decr(REPO, "r1") == 1
    assert valkey_mod.concurrency_decr(REPO, "r1") == 1  # released twice: counted once
    assert valkey_mod.concurrency_decr(REPO, "r2") == 0
    assert valkey_mod.concurrency_count(REPO) == 0


def test_pr_lock_is_exclusive_with_ttl_and_only_the_holder_releases(valkey):
    key = valkey_mod.pr_lock_key(REPO)
    with valkey_mod.pr_lock(REPO, "run-a"):
        assert valkey.get(key) == b"run-a"
        assert 0 < valkey.ttl(key) <= 120
        with pytest.raises(RepoPrLockContended, match="run-a"):
            with valkey_mod.pr_lock(REPO, "run-b"):
                pass
        assert valkey_mod.release_pr_lock(REPO, "run-b") is False  # non-owner
        assert valkey.get(key) == b"run-a"
    assert valkey.get(key) is None


def test_pr_lock_is_released_when_the_body_fails(valkey):
    with pytest.raises(ZeroDivisionError), valkey_mod.pr_lock(REPO, "run-a"):
        raise ZeroDivisionError("boom")
    assert valkey.get(valkey_mod.pr_lock_key(REPO)) is None


def test_two_concurrent_holders_run_one_at_a_time(valkey):
    inside, overlaps, done = [], [], []

    def worker(run):
        while True:
            try:
                with valkey_mod.pr_lock(REPO, run):
                    inside.append(run)
                    if len(inside) > 1:
                        overlaps.append(tuple(inside))
                    time.sleep(0.2)
                    inside.remove(run)
                    done.append(run)
                    return
            except RepoPrLockContended:
                time.sleep(0.02)

    threads = [threading.Thread(target=worker, args=(f"run-{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(done) == ["run-0", "run-1"] and overlaps == []


def test_a_lease_that_ends_before_the_release_leaves_no_count_behind(valkey):
    """A run held longer than its lease (an approval): its place ends with the lease, its late
    release is a no-op, and another run counted meanwhile neither extends it nor is blocked by
    it. (The counter of old kept the late run's +1 for good: every INCR refreshed it.)"""
    assert valkey_mod.concurrency_incr(REPO, "held", lease=2) == 1
    time.sleep(1.2)
    assert valkey_mod.concurrency_incr(REPO, "other", lease=2) == 2
    time.sleep(1.2)  # "held"'s lease is over, "other"'s is not
    assert valkey_mod.concurrency_members(REPO) == ["other"]
    assert valkey_mod.concurrency_decr(REPO, "held") == 1  # the late release
    assert valkey_mod.concurrency_decr(REPO, "other") == 0
    assert valkey.exists(valkey_mod.concurrency_key(REPO)) == 0


def test_a_run_is_counted_only_within_the_limit(valkey):
    assert valkey_mod.concurrency_incr(REPO, "a", limit=2) == 1
    assert valkey_mod.concurrency_incr(REPO, "b", limit=2) == 2
    assert valkey_mod.concurrency_incr(REPO, "c", limit=2) == 3  # over: not added
    assert valkey_mod.concurrency_incr(REPO, "a", limit=2) == 2  # already counted: kept
    assert sorted(valkey_mod.concurrency_members(REPO)) == ["a", "b"]


def test_a_slow_holder_keeps_its_lease(valkey):
    """Held three times longer than its TTL (several GitHub calls of up to 30 s): renewed, so
    no other run gets in meanwhile; released at the end."""
    key = valkey_mod.pr_lock_key(REPO)
    with valkey_mod.pr_lock(REPO, "slow", ttl=1):
        for _ in range(6):
            time.sleep(0.5)
            assert valkey.get(key) == b"slow"
            with pytest.raises(RepoPrLockContended):
                with valkey_mod.pr_lock(REPO, "other", ttl=1):
                    pass
    assert valkey.get(key) is None


def test_a_lock_lost_while_held_is_not_renewed_over_its_new_holder(valkey):
    key = valkey_mod.pr_lock_key(REPO)
    with valkey_mod.pr_lock(REPO, "first", ttl=1):
        valkey.set(key, "second")  # lost (a flush, an expiry) and taken by another run
        time.sleep(1)
        assert valkey.get(key) == b"second"
    assert valkey.get(key) == b"second"  # and the first's release leaves it alone


class _Interleaved:
    """The connection, with ``between()`` run right after any GET: the moment another run can
    step in between reading the lock and writing it."""

    def __init__(self, conn, between):
        self.conn, self.between = conn, between

    def __getattr__(self, name):
        return getattr(self.conn, name)

    def get(self, key):
        value = self.conn.get(key)
        self.between()
        return value


def test_taking_over_ones_own_stale_lock_cannot_overwrite_another_run(valkey):
    key = valkey_mod.pr_lock_key(REPO)
    valkey.set(key, "run-a", px=200)  # run-a's crashed attempt left its lock, about to expire
    others = []

    def expires_and_run_b_takes_it():
        valkey.delete(key)
        if valkey.set(key, "run-b", nx=True):
            others.append("run-b")

    conn = _Interleaved(valkey, expires_and_run_b_takes_it)
    with valkey_mod.pr_lock(REPO, "run-a", conn=conn):
        assert valkey.get(key) == b"run-a" and others == []  # one holder, whatever the timing
