# Atrium: `make run` serves the demo organisation, `make test` runs every test, `make bench`
# prints speed as ratios against a baseline measured in the same run.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLIENTS := tests/clients
WEB := web
# What the console's build is made from: it is built again when any of these changed.
WEB_SOURCES := $(shell find $(WEB)/src $(WEB)/public -type f 2>/dev/null) \
	$(wildcard $(WEB)/index.html $(WEB)/vite.config.* $(WEB)/tsconfig*.json \
	$(WEB)/persisted-query-manifest.config.*)
export DEBIAN_FRONTEND := noninteractive
# Python keeps what it compiles (__pycache__, which git ignores): the tests start hundreds of
# Pythons (servers, the CLI, pytest within pytest), each of which would compile every module it
# imports again where the environment turns that off (PYTHONDONTWRITEBYTECODE).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-stress bench install install-test system-test-deps observability-servers \
	node lint schema clean web web-dev screenshots

run: $(VENV)/.installed $(WEB)/dist/.built observability-servers
	$(BIN)/atrium serve --demo

# Test modules run on up to four processes, a module's tests on one (they share its fixtures),
# the longest first (tests/scheduling.py); the 20 slowest tests are named at the end.
# `.venv/bin/python -m pytest PATH` runs some on one.
test: $(VENV)/.installed-test system-test-deps $(CLIENTS)/node_modules/.installed $(WEB)/dist/.built
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile --durations=20

# The modules most exposed to timing (console, production, subscriptions), ROUNDS times while
# every core is kept busy by other processes; each test's failures counted (tests/stress.py).
ROUNDS ?= 3
test-stress: $(VENV)/.installed-test system-test-deps $(CLIENTS)/node_modules/.installed $(WEB)/dist/.built
	$(BIN)/python -m tests.stress --rounds $(ROUNDS)

# The console scenario runs Lighthouse from tests/clients.
bench: $(VENV)/.installed-test system-test-deps $(CLIENTS)/node_modules/.installed
	$(BIN)/python -m bench $(ARGS)

# The README's pictures of the console (docs/screenshots/), taken from the demo in Chromium.
screenshots: $(VENV)/.installed-test system-test-deps $(WEB)/dist/.built
	$(BIN)/python docs/screenshots.py

# Servers the tests start for themselves: OpenLDAP (slapd), Redis when none answers, Chromium,
# Prometheus and Alertmanager, and for the production tests HAProxy and PgBouncer.
system-test-deps: observability-servers
	@if ! command -v slapd >/dev/null 2>&1 && [ ! -x /usr/sbin/slapd ]; then \
	  apt-get update -q && apt-get install -y -q slapd ldap-utils; \
	fi
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q redis-server; \
	fi
	@if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then \
	  apt-get update -q && apt-get install -y -q chromium; \
	fi
	@if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then \
	  apt-get update -q && apt-get install -y -q haproxy; \
	fi
	@if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then \
	  apt-get update -q && apt-get install -y -q pgbouncer; \
	fi

# Prometheus and Alertmanager (Debian's, promtool included): the tests start their own, and
# `make run`'s demo serves its metrics and alerts from a pair of its own.
observability-servers:
	@if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1 \
	  || ! command -v prometheus-alertmanager >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q prometheus prometheus-alertmanager; \
	fi

# Node and npm, Debian's own when none is installed: the console's build (Vite 8) needs Node 20.19 or
# later (Debian 13 has it); the real-client tests need 18 or later.
node:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q nodejs npm; \
	fi

# The console (web/): its npm packages as the lock pins them, and its build (Vite's manifest,
# the hashed assets and the persisted-query manifest in web/dist/) when its sources changed,
# type-checked first (the image's build, deploy/build-console.sh, leaves that to this).
$(WEB)/node_modules/.installed: $(WEB)/package-lock.json $(WEB)/package.json | node
	cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(WEB)/dist/.built: $(WEB)/node_modules/.installed $(WEB_SOURCES)
	cd $(WEB) && npm run --silent typecheck && npm run --silent build
	touch $@

web: $(WEB)/dist/.built

# For people working on the client: Vite's dev server, proxying /graphql to `make run`'s server.
web-dev: $(WEB)/node_modules/.installed
	cd $(WEB) && npm run dev

# The npm packages of the real-client tests (Apollo Client, graphql-http), as the lock pins them:
# installed again when node_modules is missing or older than the lock. Node 18 or later (Debian's
# own when none is installed).
$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package-lock.json $(CLIENTS)/package.json | node
	cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy atrium graph resolvers loaders sources bench

# Regenerate the committed schema after a deliberate change.
schema: $(VENV)/.installed
	$(BIN)/atrium schema print > schema.graphql

# Debian's python3 comes without venv and pip; install them when missing.
$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 && $(PYTHON) -c 'import venv, ensurepip' 2>/dev/null \
	  || { apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,dev]'
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .atrium $(CLIENTS)/node_modules $(WEB)/node_modules $(WEB)/dist
