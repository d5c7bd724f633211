from tests.temporal_worker import temporal_env, worker  # noqa: F401  (shared fixtures)
