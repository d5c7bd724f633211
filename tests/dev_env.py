"""Loaded first by pytest (``-p tests.dev_env`` in pyproject.toml), before pytest-django reads
the settings: the test suite runs with development settings, as ``make test`` does.

Without DJANGO_DEBUG the settings are production ones, which refuse to start without a secret
key and redirect every request to HTTPS. Processes the tests spawn (agents, the MCP server,
``manage.py``) inherit this environment. A DJANGO_DEBUG already set is kept.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")
