# The one task runner: the README, CI and developers run these same targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STORE := build/demo-store

.PHONY: demo test lint typecheck unit bench clean vscode vscode-real screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

## demo: install, import the bundled example and print the context block of its prompt
demo: $(VENV)/.installed-run
	rm -rf $(DEMO_STORE)
	$(BIN)/lsp-memory --store $(DEMO_STORE) import examples/demo/memory.jsonl
	$(BIN)/lsp-memory --store $(DEMO_STORE) --vault examples/demo/vault build-context examples/demo/prompt.md

## test: install test dependencies; lint, type-check, check layering, run every test
test: lint typecheck unit

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

unit: $(VENV)/.installed-test
	$(BIN)/python -m pytest --ignore=tests/vscode   # those run in `make vscode-real`

## vscode: the VS Code extension: lint, type-check, tests (also against the server), editors/vscode/lsp-memory-<version>.vsix
vscode: $(VENV)/.installed-run
	LSP_MEMORY_SERVER=$(CURDIR)/$(BIN)/lsp-memory LSP_MEMORY_REQUIRE_SERVER=1 editors/vscode/ci.sh

## vscode-real: the extension inside a real VS Code (code-server), driven through Chromium;
## installs what is missing (tests/vscode/install.sh); needs `make vscode`'s .vsix
vscode-real: $(VENV)/.installed-test
	tests/vscode/install.sh
	LSP_MEMORY_REQUIRE_VSCODE=1 $(BIN)/python -m pytest tests/vscode -q

## screenshots: the README's VS Code pictures (docs/images/vscode-*.png), by the same test
screenshots: $(VENV)/.installed-test
	tests/vscode/install.sh
	LSP_MEMORY_REQUIRE_VSCODE=1 LSP_MEMORY_SCREENSHOTS=docs/images $(BIN)/python -m pytest tests/vscode -q

## bench: the foundation benchmark (slow; every benchmark and its command: docs/benchmarks.md)
bench: $(VENV)/.installed-test
	$(BIN)/python -m benchmarks.foundation

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis
	rm -rf editors/vscode/node_modules editors/vscode/dist editors/vscode/*.vsix
