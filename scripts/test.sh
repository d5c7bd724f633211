#!/usr/bin/env bash
# `make test`'s pytest part: start the test devstack, run the suite in two parts, stop it.
#   1. every test not marked `serial`, on $2 pytest-xdist workers (each has its own test
#      database and Valkey DB; Temporal task queues are per test);
#   2. the `serial` tests (they stop, restart or flood a shared server), alone; without
#      arguments, from the files that mark one serial only.
# Usage: scripts/test.sh PYTHON WORKERS [pytest args...]. A part that selects no test (exit
# code 5, e.g. PYTEST_ARGS naming one file) does not fail the run; both parts always run.
py=$1 workers=$2
shift 2
"$py" manage.py devstack up >/dev/null || exit 1
status=0
part() {
    "$py" -m pytest "$@"
    local rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then status=$rc; fi
}
if [ "$workers" -gt 0 ]; then
    part -n "$workers" --dist worksteal -m "not serial" "$@"
    if [ $# -eq 0 ]; then
        # Collecting every test again for the few serial ones costs seconds of CPU: only the
        # files that mark a test serial (`pytest.mark.serial`, written as such) are collected.
        part -m serial $(grep -l "mark\.serial" tests/test_*.py)
    else
        part -m serial "$@"
    fi
else
    part "$@"
fi
"$py" manage.py devstack down >/dev/null
exit $status
