"""R5: the pr_lock and the concurrency slots as state machines (hypothesis stateful testing)
against the real Valkey: random sequences of takes, releases by owners and non-owners, a
crashed attempt's leftover lock, a flush (a Valkey restart), and waits longer than the lock's
TTL, checked against a model after every step."""

import time
from contextlib import ExitStack

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from amtp_site import valkey as valkey_mod
from amtp_site.errors import RepoPrLockContended

REPO = "acme/states"
RUNS = st.sampled_from(["run-a", "run-b", "run-c"])
TTL = 1.0  # seconds: the waits below outlast it, so only renewal keeps a holder's lease
LIMIT = 2


class LockAndSlots(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.conn = valkey_mod.client()
        self.conn.flushdb()
        self.held: dict[str, ExitStack] = {}  # runs inside ``with pr_lock`` (they think so)
        self.holder: str | None = None  # who the lock belongs to
        self.counted: set[str] = set()

    # --- pr_lock ----------------------------------------------------------------------------
    @rule(run=RUNS)
    def take(self, run):
        if run in self.held:
            return
        stack = ExitStack()
        try:
            stack.enter_context(valkey_mod.pr_lock(REPO, run, ttl=TTL))
        except RepoPrLockContended:
            assert self.holder not in (None, run), "refused a free lock or its own"
            return
        assert self.holder in (None, run), f"{run} got in while {self.holder} holds it"
        self.held[run], self.holder = stack, run

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def give_back(self, data):
        run = data.draw(st.sampled_from(sorted(self.held)))
        self.held.pop(run).close()
        if self.holder == run:
            self.holder = None

    @rule(run=RUNS)
    def release_by_a_non_owner(self, run):
        if run == self.holder:
            return
        assert valkey_mod.release_pr_lock(REPO, run) is False

    @precondition(lambda self: self.holder is None)
    @rule(run=RUNS)
    def a_crashed_attempt_left_its_lock(self, run):
        self.conn.set(valkey_mod.pr_lock_key(REPO), run, px=int(TTL * 1000))
        self.holder = run  # until it expires (a wait) or the run takes it over

    @rule()
    def valkey_restarts(self):
        self.conn.flushdb()
        self.holder, self.counted = None, set()

    @precondition(lambda self: self.holder is not None)
    @rule()
    def a_long_github_call(self):
        time.sleep(TTL * 1.5)
        if self.holder is not None and self.holder not in self.held:
            self.holder = None  # a leftover nobody renews has expired

    # --- slots ------------------------------------------------------------------------------
    @rule(run=RUNS)
    def count_in(self, run):
        count = valkey_mod.concurrency_incr(REPO, run, limit=LIMIT)
        if run in self.counted or len(self.counted) < LIMIT:
            self.counted.add(run)
        assert count == len(self.counted) + (run not in self.counted)

    @rule(run=RUNS)
    def count_out(self, run):
        self.counted.discard(run)
        assert valkey_mod.concurrency_decr(REPO, run) == len(self.counted)

    @invariant()
    def the_lock_is_the_models(self):
        value = self.conn.get(valkey_mod.pr_lock_key(REPO))
        assert (value.decode() if value else None) == self.holder

    @invariant()
    def slots_are_the_models(self):
        assert set(valkey_mod.concurrency_members(REPO)) == self.counted
        assert len(self.counted) <= LIMIT

    def teardown(self):
        for stack in self.held.values():
            stack.close()
        self.conn.flushdb()


@pytest.fixture
def states(valkey):
    return LockAndSlots


def test_lock_and_slots_hold_their_promises(states):
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        states,
        settings=settings(
            max_examples=10,
            stateful_step_count=12,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
