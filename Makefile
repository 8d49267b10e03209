# Atrium: `make run` serves the demo organisation, `make test` runs every test, `make bench`
# prints speed as ratios against a baseline measured in the same run.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLIENTS := tests/clients
export DEBIAN_FRONTEND := noninteractive

.PHONY: run test bench install install-test system-test-deps lint schema clean

run: $(VENV)/.installed
	$(BIN)/atrium serve --demo

test: $(VENV)/.installed-test system-test-deps $(CLIENTS)/node_modules/.installed
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-test system-test-deps
	$(BIN)/python -m bench $(ARGS)

# Servers the tests start for themselves: OpenLDAP (slapd), and Redis when none answers.
system-test-deps:
	@if ! command -v slapd >/dev/null 2>&1 && [ ! -x /usr/sbin/slapd ]; then \
	  apt-get update -q && apt-get install -y -q slapd ldap-utils; \
	fi
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q redis-server; \
	fi

# The npm packages of the real-client tests (Apollo Client, graphql-http), as the lock pins them:
# installed again when node_modules is missing or older than the lock. Node 18 or later (Debian's
# own when none is installed).
$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package-lock.json $(CLIENTS)/package.json
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q nodejs npm; \
	fi
	cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy graph resolvers loaders sources

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
	rm -rf $(VENV) .atrium $(CLIENTS)/node_modules
