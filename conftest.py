"""Shared fixtures: the real embedded services (started by `make test`)."""

import pytest


@pytest.fixture
def valkey(settings):
    """A real Valkey connection on a database of its own, emptied before and after the test."""
    import redis

    client = redis.Redis.from_url(settings.VALKEY_URL, db=15, decode_responses=False)
    client.flushdb()
    settings.VALKEY_URL = settings.VALKEY_URL.rsplit("/", 1)[0] + "/15"
    yield client
    client.flushdb()
    client.close()
