# The two commands of the README: `make run` and `make test`. Both install what they need
# into .venv first (again only when pyproject.toml changed).
VENV ?= .venv
PORT ?= 8080
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint chromium openapi bench capacity lock

$(STAMP): pyproject.toml requirements.lock requirements-test.lock
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11+" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "error: Python 3.11 or newer is required" >&2; exit 1; }
	@echo "[1/3] creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "[2/3] installing the locked dependencies and test tools (about 40 s the first time)"
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements-test.lock
	@echo "[3/3] installing evidencia"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/evidencia doctor $(if $(LOCAL_MODEL),--local-model)
	$(BIN)/evidencia serve --port $(PORT) $(if $(LOCAL_MODEL),--local-model)

PRETTIER := prettier@3.10.1

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	@command -v npx >/dev/null || { echo "error: checking the console's formatting needs Node.js (npx): 'sudo apt-get install -y nodejs npm'" >&2; exit 1; }
	npx --yes $(PRETTIER) --check console/

# The console's browser tests drive Debian's Chromium. `make test` installs nothing
# system-wide: without a Chromium it stops at once and says how to install one.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -x "$(CHROMIUM)" ] || { \
	  echo "error: the console's browser tests need Chromium: install it with 'sudo apt-get install -y chromium' (Debian, Ubuntu), or point CHROMIUM=/path/to/chromium at one" >&2; exit 1; }

test: lint chromium
	$(BIN)/evidencia doctor
	$(BIN)/pytest --cov --cov-report=term

bench: $(STAMP)
	$(BIN)/python -m benchmarks
	$(BIN)/evidencia capacity

capacity: $(STAMP)
	$(BIN)/evidencia capacity

openapi: $(STAMP)
	$(BIN)/evidencia openapi

lock: $(STAMP)
	$(BIN)/evidencia lock
