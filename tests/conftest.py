import amtp_site.urls  # noqa: F401  (the admin's registrations, as the web server has them)
from tests.temporal_worker import temporal_env, worker  # noqa: F401  (shared fixtures)

# Tests with a Temporal worker or a live server run whole pipelines and take seconds to a
# minute each; the rest take milliseconds.
HEAVY_FIXTURES = {"temporal_env", "worker", "live_server"}


def pytest_collection_modifyitems(items):
    """The heavy tests first (stable otherwise): pytest-xdist then spreads them over its
    workers at the start instead of leaving one worker on a minute-long test at the end."""
    items.sort(key=lambda item: not HEAVY_FIXTURES.intersection(item.fixturenames))
