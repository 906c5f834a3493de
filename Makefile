# Docpub: `make run` starts the local stack, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAGE ?= dev
export PORT

.PHONY: run test test-fast admin bench load openapi package deploy lint-infra clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

run: $(BIN)/.installed
	$(BIN)/python -m scripts.local_stack --port $(PORT)

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m "not e2e and not browser" $(PYTEST_ARGS)

admin: $(BIN)/.installed
	@$(BIN)/python -m scripts.admin $(ARGS)

bench: $(BIN)/.installed
	$(BIN)/python -m bench.aws_calls

openapi: $(BIN)/.installed
	$(BIN)/python -m scripts.export_openapi

load: $(BIN)/.installed
	$(BIN)/python -m bench.load $(ARGS)

clean:
	rm -rf build .pytest_cache
