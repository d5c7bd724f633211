"""Signals the apps above ``runs`` listen to, so that ``runs`` never imports them."""

from django.dispatch import Signal

# Sent inside the transaction that moves a run to failed or cancelled, with ``run_id`` and
# ``why``: the approvals app rejects the run's pending approval in the same transaction.
run_closed = Signal()

# Sent inside each transaction of ``manage.py prune`` with ``run_ids``, before the runs and
# their own rows are deleted: an app above ``runs`` deletes its rows of those runs.
runs_pruning = Signal()
