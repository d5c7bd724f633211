#!/usr/bin/env bash
# The API fuzzing of tests/test_api_schemathesis.py with a longer search than `make test`'s
# (10 generated requests per operation and mode there): AMTP_FUZZ_EXAMPLES per operation,
# 100 unless set. Starts and stops the test devstack like `make test`.
# Usage: scripts/fuzz_api.sh [pytest args...]   (from the repository root)
export AMTP_FUZZ_EXAMPLES=${AMTP_FUZZ_EXAMPLES:-100}
export DJANGO_DEBUG=true AMTP_DEVSTACK_DIR=${AMTP_DEVSTACK_DIR:-$PWD/.devstack/test}
exec bash scripts/test.sh .venv/bin/python 0 tests/test_api_schemathesis.py "$@"
