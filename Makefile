# agentsh — the two front-door commands are `make run` and `make test`.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.agentsh-installed
VAR   := $(CURDIR)/var

.PHONY: setup run test lint bench install man clean

setup:
	@bash agent/bootstrap/setup-host.sh --venv $(VENV)

# The daemon in the foreground on the embedded default policy, state under ./var/.
run: setup
	@mkdir -p $(VAR)
	@echo "agentshd starting; in another terminal:"
	@echo "  $(VENV)/bin/agentshctl --socket $(VAR)/run/agentsh.sock status     # health, one line per problem"
	@echo "  $(VENV)/bin/agentshctl --socket $(VAR)/run/agentsh.sock selftest   # prove each layer enforces, live"
	$(VENV)/bin/agentshd --foreground --config-dir $(VAR)/etc \
	  --state-dir $(VAR)/lib --events $(VAR)/log/events.jsonl \
	  --socket $(VAR)/run/agentsh.sock

# Two pytest-xdist workers, then the `serial` tests alone (tests/run-suite.sh);
# AGENTSH_TEST_WORKERS=0 runs the suite in one process.
test: setup
	@bash tests/run-suite.sh $(PY) $(PYTEST_ARGS)

# ruff, then mypy on the installed link tree (agentsh.* names; [tool.mypy] in
# pyproject.toml); mypy's paths into the link tree are shown as the source files
# they link to (docs/development.md "Imports and tools").
lint: setup
	$(VENV)/bin/ruff check .
	@set -o pipefail; $(VENV)/bin/mypy | sed -E 's#^build/__editable__[^/]*/agentsh/##'

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

install: setup
	$(VENV)/bin/agentshctl install-service

# Man pages generated from the commands' help (install-service installs them too).
man:
	$(VENV)/bin/agentshctl man --out build/man

clean:
	rm -rf var .pytest_cache build/man
