"""Telling people about a run: the ``notifications`` rows, their senders (mail, webhook) and their
admin."""
