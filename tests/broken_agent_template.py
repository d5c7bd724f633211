"""An agent process template one of whose preload modules fails to import
(tests/test_activity_failures.py): the real template, then a module that does not exist."""

from runs.temporal.agent_template import preload

PRELOAD_ERROR = preload(("json", "tests.no_such_module_for_the_template"), ())
