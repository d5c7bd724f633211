"""A run's end under random event orders (hypothesis stateful testing) against the real
PostgreSQL and Valkey: the workflow's start and stages, its EndRun (passed, failed,
cancelled), a cancel, reconcile_runs acting on what it read before the run moved, a retried
end, and a process killed mid-end (before its transaction commits, or after it and before the
slot is given back). After every step: terminal is final, a terminal run has no open stage,
the run ended once (one call said so), it is counted in the metrics once and in the rollups
once, and its slot is given back (only its own) unless the last end died before doing so."""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import REGISTRY
from temporalio.client import WorkflowExecutionStatus

from amtp_site import valkey as valkey_mod
from reporting.models import RunDay
from runs import slots, transitions
from runs.models import Run, RunStart, RunStatus, StageStatus
from runs.services import run_cancel
from runs.stages import Failure
from runs.temporal import reconcile
from tests.factories import RepositoryFactory, RunFactory

STAGES = st.sampled_from(["crawl_repo", "boot_app", "explore_app"])
ENDS = st.sampled_from([RunStatus.PASSED, RunStatus.FAILED, RunStatus.CANCELLED])
CLOSED = st.sampled_from(
    [
        WorkflowExecutionStatus.TERMINATED,
        WorkflowExecutionStatus.TIMED_OUT,
        WorkflowExecutionStatus.CANCELED,
    ]
)
OPEN_STAGES = [str(s) for s in transitions.OPEN_STAGE]


class Killed(Exception):
    """The process running the end died here."""


def finished_count(trigger: str) -> float:
    return sum(
        REGISTRY.get_sample_value("amtp_runs_finished_total", {"trigger": trigger, "status": s})
        or 0
        for s in Run.TERMINAL
    )


class RunEnds(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        repository = RepositoryFactory(full_name=f"acme/p{uuid.uuid4().hex[:12]}")
        repository.max_concurrent_runs = 3
        repository.save(update_fields=["max_concurrent_runs"])
        self.repo = repository.full_name
        self.run = RunFactory(repository=repository)
        transitions.create_stages(self.run)
        RunStart.objects.create(run=self.run, task_queue="q")
        self.run_id = str(self.run.pk)
        self.stale = Run.objects.get(pk=self.run_id)  # what a reconciler read at the start
        other = RunFactory(repository=repository, status=RunStatus.RUNNING)
        self.other_id = str(other.pk)
        slots.slot_acquire(self.other_id)  # a run of the same repository, holding its place
        self.counted_before = finished_count(self.run.trigger)
        self.status = RunStatus.PENDING  # the model
        self.holds_slot = False
        self.ended_by: list[str] = []  # the calls that said they ended the run
        self.last_end = None

    # --- the model's view of one end ------------------------------------------------------
    def _expect(self, status: str) -> str | None:
        """The status an end ``status`` moves the run to now, or None (it stays)."""
        if self.status in Run.TERMINAL:
            return None
        if status == RunStatus.PASSED and self.status != RunStatus.RUNNING:
            return None
        if status == RunStatus.FAILED and self._every_stage_passed():
            return RunStatus.PASSED if self.status == RunStatus.RUNNING else None
        return status

    def _every_stage_passed(self) -> bool:
        statuses = set(self.run.stages.values_list("status", flat=True))
        return statuses == {StageStatus.PASSED}

    def _end(self, status: str, how: str) -> None:
        """End the run ``status`` through ``how`` (the workflow, a cancel, reconcile)."""
        expected = self._expect(status)
        if how == "reconcile":
            closed = {
                RunStatus.CANCELLED: WorkflowExecutionStatus.CANCELED,
                RunStatus.FAILED: WorkflowExecutionStatus.TERMINATED,
            }[status]
            reconcile.reconcile_run(self.stale, reconcile.WorkflowSeen(closed), dry_run=False)
            ended = Run.objects.get(pk=self.run_id).status != self.status
        elif how == "cancel" and self.status == RunStatus.PENDING:
            run_cancel(run=Run.objects.get(pk=self.run_id))  # never started: ended here
            ended = expected is not None
        else:
            failure = Failure(self.run_id, "crawl_repo", "GitHubForbidden", "no access")
            ended = transitions.run_end(
                run_id=self.run_id,
                status=status,
                failure=failure if status == RunStatus.FAILED else None,
            )
        assert ended == (expected is not None), (status, how, self.status)
        if ended:
            self.ended_by.append(f"{how} {status}")
            self.status = expected
        self.holds_slot = False  # every call that gets this far gives it back
        self.last_end = (status, how)

    # --- the events -----------------------------------------------------------------------
    @precondition(lambda self: self.status == RunStatus.PENDING)
    @rule()
    def workflow_starts(self):
        RunStart.objects.filter(run_id=self.run_id).delete()  # the dispatcher took it
        assert transitions.run_running(self.run_id)
        slots.slot_acquire(self.run_id)
        self.status, self.holds_slot = RunStatus.RUNNING, True

    @rule(stage=STAGES)
    def stage_begins(self, stage):
        begun = transitions.stage_begin(self.run_id, stage)
        if self.status in Run.TERMINAL:
            assert not begun

    @rule(stage=STAGES)
    def stage_passes(self, stage):
        transitions.stage_pass(self.run_id, stage)

    @rule(status=ENDS)
    def workflow_ends(self, status):
        self._end(status, "workflow")

    @rule()
    def cancel(self):
        self._end(RunStatus.CANCELLED, "cancel")

    @rule(closed=CLOSED)
    def reconcile_acts_on_what_it_read(self, closed):
        if self.stale.status not in transitions.OPEN_RUN:
            return
        how = RunStatus.CANCELLED if closed == WorkflowExecutionStatus.CANCELED else "failed"
        self._end(how, "reconcile")

    @precondition(lambda self: self.last_end is not None)
    @rule()
    def retry(self):
        self._end(*self.last_end)

    @rule(status=ENDS)
    def killed_before_commit(self, status):
        before = Run.objects.get(pk=self.run_id).status
        with (
            mock.patch.object(transitions, "roll_up", side_effect=Killed),
            pytest.raises(Killed) if self._expect(status) else nullcontext(),
        ):
            self._end_quietly(status)
        assert Run.objects.get(pk=self.run_id).status == before  # rolled back
        if self._expect(status) is None:
            self.holds_slot = False  # nothing to roll up: it went on and gave it back

    @rule(status=ENDS)
    def killed_before_the_slot_is_given_back(self, status):
        expected = self._expect(status)
        with mock.patch.object(transitions, "give_back", side_effect=Killed):
            with pytest.raises(Killed):
                self._end_quietly(status)
        if expected is not None:
            self.ended_by.append(f"killed {status}")
            self.status = expected
        self.last_end = (status, "workflow")  # Temporal retries the activity

    def _end_quietly(self, status):
        failure = Failure(self.run_id, "crawl_repo", "GitHubForbidden", "no access")
        transitions.run_end(
            run_id=self.run_id,
            status=status,
            failure=failure if status == RunStatus.FAILED else None,
        )

    # --- the invariants -------------------------------------------------------------------
    @invariant()
    def terminal_is_final_and_closes_every_stage(self):
        run = Run.objects.get(pk=self.run_id)
        assert run.status == self.status
        if self.status in Run.TERMINAL:
            assert not run.stages.filter(status__in=OPEN_STAGES).exists()

    @invariant()
    def ended_once_counted_once_rolled_up_once(self):
        ended = self.status in Run.TERMINAL
        assert len(self.ended_by) == ended, self.ended_by
        counted = finished_count(self.run.trigger) - self.counted_before
        assert counted == ended
        days = RunDay.objects.filter(repository__full_name=self.repo)
        assert sum(days.values_list("runs", flat=True)) == ended
        if ended:
            assert set(days.values_list("status", flat=True)) == {self.status}

    @invariant()
    def its_slot_is_given_back_and_no_other(self):
        members = valkey_mod.concurrency_members(self.repo)
        assert self.other_id in members
        assert (self.run_id in members) == self.holds_slot, (members, self.holds_slot)


@pytest.mark.django_db
def test_a_run_ends_once_whatever_the_order_of_events(valkey):
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        RunEnds,
        settings=settings(
            max_examples=15,
            stateful_step_count=10,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
