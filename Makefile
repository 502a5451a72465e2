# The two commands of the README: `make run` and `make test`. Both install what they need
# into .venv first (again only when pyproject.toml changed).
VENV ?= .venv
PORT ?= 8080
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run admin test test-fast lint style chromium openapi bench capacity lock screenshots

# uv installs the lock in parallel, in a few seconds where pip takes half a minute; it is
# itself pinned with its hashes in the lock, and installed first by the venv's own pip.
export UV_PIN := import re; print(re.search(r"^uv==.*?(?=\n\S)", open("requirements-test.lock").read(), re.M | re.S)[0])
# --compile-bytecode: every process the suite starts (each `evidencia` command, each worker)
# would otherwise compile the libraries it imports again where PYTHONDONTWRITEBYTECODE is set,
# which halves the CPU of a start.
UV_PIP := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

$(STAMP): pyproject.toml requirements.lock requirements-test.lock
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11+" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "error: Python 3.11 or newer is required" >&2; exit 1; }
	@echo "[1/3] creating $(VENV), with the locked uv to install into it"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "$$UV_PIN" > $(VENV)/uv.txt
	$(BIN)/python -m pip install --quiet --require-hashes -r $(VENV)/uv.txt
	@echo "[2/3] installing the locked dependencies and test tools, compiled (about 20 s the first time)"
	$(UV_PIP) --require-hashes -r requirements-test.lock
	@echo "[3/3] installing evidencia"
	$(UV_PIP) --no-deps -e .
	@touch $(STAMP)

# `make run` keeps the emulator's documents (tenants, tokens, runs) in $(DATA) between runs:
# imported at start, exported at Ctrl-C. CLEAN=1 wipes them and starts empty.
DATA ?= .local-data

run: $(STAMP)
	$(BIN)/evidencia doctor --port $(PORT) $(if $(LOCAL_MODEL),--local-model)
	$(BIN)/evidencia serve --port $(PORT) --data $(DATA) $(if $(CLEAN),--clean) $(if $(LOCAL_MODEL),--local-model)

# `evidencia` lives in $(VENV)/bin, not on PATH: `make admin ARGS="tenant list"` runs
# `evidencia admin tenant list` (as does `.venv/bin/evidencia admin tenant list`).
admin: $(STAMP)
	$(BIN)/evidencia admin $(ARGS)

PRETTIER := prettier@3.10.1

lint: style
	$(BIN)/mypy

# Every linter but mypy: `make test` runs mypy beside the suite instead, on the core the
# suite's start leaves idle.
style: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	@command -v npx >/dev/null || { echo "error: checking the console's formatting needs Node.js (npx): 'sudo apt-get install -y nodejs npm'" >&2; exit 1; }
	npx --yes $(PRETTIER) --check console/

# The console's browser tests drive Debian's Chromium. When none is found, `make test`
# installs Debian's `chromium` as root or with password-less sudo, saying so first; otherwise
# it stops at once and says how to install one. `make run` needs no browser.
APT_CHROMIUM := sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null'
CHROMIUM_MISSING := echo "error: the console's browser tests need Chromium: install it with 'sudo apt-get install -y chromium' (Debian, Ubuntu), or point CHROMIUM=/path/to/chromium at one" >&2; exit 1
CHROMIUM_INSTALLING := echo "installing Debian's chromium for the console's browser tests (apt-get install -y chromium)" >&2

chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -x "$(CHROMIUM)" ]; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then $(CHROMIUM_MISSING); \
	elif [ "$$(id -u)" = 0 ]; then $(CHROMIUM_INSTALLING); $(APT_CHROMIUM); \
	elif sudo -n true 2>/dev/null; then $(CHROMIUM_INSTALLING); sudo $(APT_CHROMIUM); \
	else $(CHROMIUM_MISSING); fi

# The suite runs on every core with pytest-xdist, each worker with its own emulator, Gemini
# and Anthropic stand-ins and host (tests/conftest.py). Its tests wait on the network and
# on subprocesses a good part of the time: with one worker more than the cores the cores
# were 85 % busy, and two more than the cores finish a fresh clone about 40 s sooner
# (416 s against 454 s, docs/testing.md); TEST_WORKERS=0 runs it in one process. Each worker is handed a module at a time, the
# longest first (tests/conftest.py's LONGEST_FIRST), so the run ends on short modules.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 2)')

# Our own modules compiled once before the suite, for the same reason (only those changed
# since are compiled again).
COMPILED := functions shared cli main.py

test: style chromium
	$(BIN)/python -m compileall -q -j 0 $(COMPILED)
	$(BIN)/evidencia doctor
	$(BIN)/mypy & mypy=$$!; \
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=20 --cov --cov-report=term; \
	tests=$$?; wait $$mypy && exit $$tests

# The pure tests alone (no emulator, browser, subprocess or network): the inner loop.
test-fast: $(STAMP)
	$(BIN)/pytest -m pure -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks
	$(BIN)/evidencia capacity
	$(BIN)/evidencia performance

capacity: $(STAMP)
	$(BIN)/evidencia capacity

openapi: $(STAMP)
	$(BIN)/evidencia openapi

# docs/screenshots/ again, as the console's browser tests take them (one process).
screenshots: $(STAMP) chromium
	CONSOLE_SCREENSHOTS=docs/screenshots $(BIN)/pytest -p no:xdist -q tests/console

lock: $(STAMP)
	$(BIN)/evidencia lock
