# The two commands a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Empty: the per-user data directory (NOTOCHORD_DATA_DIR, or e.g. ~/.local/share/notochord).
DATA_DIR ?=
DATA_DIR_OPTION := $(if $(DATA_DIR),--data-dir $(DATA_DIR))
PORT ?= 8420

.PHONY: run test lint bench install lock clean screenshots chromium

$(STAMP): requirements-dev.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
	$(BIN)/uv pip sync --quiet --python $(BIN)/python --require-hashes requirements-dev.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# The console's one-time sign-in link is the first line printed (`notochord status` shows the rest).
run: $(STAMP)
	@$(BIN)/notochord $(DATA_DIR_OPTION) init > /dev/null
	@$(BIN)/notochord $(DATA_DIR_OPTION) serve --host 127.0.0.1 --port $(PORT)

test: $(STAMP) chromium
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4

# The console's browser tests (and screenshots) drive the system's Chromium, never a downloaded
# one. Where it is missing it is installed from Debian's packages, as root or through password-less
# sudo; anywhere else the message says what to install.
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then as_root=; elif sudo -n true 2>/dev/null; then as_root="sudo -n"; \
		else as_root=none; fi; \
		if [ "$$as_root" != none ] && command -v apt-get >/dev/null; then \
			echo "installing the system's Chromium (Debian package chromium) for the console's browser tests"; \
			$$as_root apt-get update -qq && $$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
		else \
			echo "the console's browser tests need the system's Chromium: install the package chromium (for example: sudo apt-get install chromium), then run make test again" >&2; \
			exit 1; \
		fi; }

# pytest imports every tests/**/conftest.py as the same module, `conftest`, and mypy cannot hold one
# name twice in a run: the run over tests/ leaves them out (pyproject.toml's exclude) and each
# conftest.py is checked in a run of its own.
CONFTESTS = $(sort $(shell find tests -name conftest.py))

lint: $(STAMP)
	$(BIN)/ruff check src tests $(wildcard bench)
	$(BIN)/ruff format --check src tests $(wildcard bench)
	$(BIN)/mypy --strict src $(wildcard bench)
	$(BIN)/mypy --strict tests
	for conftest in $(CONFTESTS); do \
		$(BIN)/mypy --strict --no-error-summary $$conftest || exit 1; \
	done

# Every benchmark prints its figures beside a baseline run in the same process; none asserts.
# The retrieval benchmark embeds the whole corpus on its first run (tens of minutes on two cores)
# and keeps its vectors in bench/.cache/ for later runs.
BENCHES := cli writes backup gem_api runtime network http_load console mcp retrieval

bench: $(STAMP)
	@for b in $(BENCHES); do \
		if [ -f bench/$$b.py ]; then echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py || exit 1; fi; \
	done

bench-%: $(STAMP)
	$(BIN)/python bench/$*.py

# PNGs of every console page, English and Chinese, desktop and 360 px wide, over a demo data
# directory; written to screenshots/ (git-ignored). Needs the system's chromium.
screenshots: $(STAMP) chromium
	$(BIN)/python tests/console/make_screenshots.py screenshots

# Re-pin every dependency (hashes, no index URLs) after editing pyproject.toml.
lock: $(STAMP)
	$(BIN)/uv pip compile --quiet --python-version 3.11 --generate-hashes --no-header \
		pyproject.toml -o requirements.lock
	$(BIN)/uv pip compile --quiet --python-version 3.11 --generate-hashes --no-header \
		--extra dev pyproject.toml -o requirements-dev.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
