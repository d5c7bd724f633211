"""Shared fixtures: the real embedded services (started by `make test`)."""

import pytest


@pytest.fixture
def valkey(settings):
    """A real Valkey connection on a database of its own, emptied before and after the test."""
    import redis

    settings.VALKEY_URL = settings.VALKEY_URL.rsplit("/", 1)[0] + "/15"
    client = redis.Redis.from_url(settings.VALKEY_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
