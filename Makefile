# Docpub: `make run` starts the local stack, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# make run HOST=0.0.0.0: listen on every interface (README: "Another address").
HOST ?= 127.0.0.1
STAGE ?= dev
STACK ?= docpub-$(STAGE)
BUILD_DIR ?= build
export PORT

.PHONY: run sso-provider test test-aws test-fast lint admin bench bench-aws bench-embedded load openapi package deploy lint-infra clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

# The embedded store (SQLite + files in $${DOCPUB_DATA_DIR:-.local}); restarts on source changes.
run: $(BIN)/.installed
	$(BIN)/python -m scripts.local_stack --host $(HOST) --port $(PORT)

# The bundled OpenID provider for trying single sign-on with `make run` (README, docs/sso.md):
# the certified oidc-provider package on Node, installed into .oidc-provider/ on first use.
OIDC_PORT ?= 9400
sso-provider:
	@test -f .oidc-provider/.installed || scripts/oidc-provider.sh .oidc-provider
	OIDC_PORT=$(OIDC_PORT) OIDC_REDIRECT_URI=http://127.0.0.1:$(PORT)/dashboard/sso/callback node scripts/oidc_provider.mjs

# ruff + mypy (pyproject.toml: strict on domain/, services/, ports/), then the whole suite; then the
# real-engine tier when Java and npm are here (.ci/run installs them).
test: lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	@if command -v java >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory test-aws; \
	else echo "make test: no java/npm here, the real-engine tier (make test-aws) did not run" >&2; fi

# The storage contract suite, the fault-injection tests and the AWS end-to-end slice on
# DynamoDB Local + s3rver (loopback, free ports; tests/engines.py, docs/scaling.md).
ENGINES_DIR ?= .engines
$(ENGINES_DIR)/.installed: scripts/engines.sh
	scripts/engines.sh $(ENGINES_DIR)

# These e2e tests run on a `make run` stack with DOCPUB_STORAGE=aws on the engines (the
# `stack` fixture); the 40-edit race runs at the service level in tests/contract (faster).
ENGINE_E2E := tests/e2e/test_e2e_stack.py::test_free_cap_under_concurrent_http_creates \
	tests/e2e/test_links_e2e.py tests/browser/test_oauth_e2e.py::test_official_client_with_dynamic_registration
test-aws: $(BIN)/.installed $(ENGINES_DIR)/.installed
	DOCPUB_TEST_ENGINES=local DOCPUB_ENGINES_DIR=$(abspath $(ENGINES_DIR)) $(BIN)/python -m pytest -q \
		-p no:cacheprovider -k "not sqlite" tests/contract tests/engine $(ENGINE_E2E) $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/mypy

# Tests by level (tests/README.md): unit and contract are the fast ones.
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m "not slow" tests/unit tests/contract $(PYTEST_ARGS)

admin: $(BIN)/.installed
	@$(BIN)/python -m scripts.admin $(ARGS)

# Every bench prints a markdown table with its floor measured in the same run
# (docs/performance.md). They use moto (in-process or a child server), never AWS.
BENCHES := aws_calls edit_engine large_documents cold_start share_views live_pages bounds content share_depth reanchor adversarial scanning
bench: $(BIN)/.installed
	@set -e; for b in $(BENCHES); do $(BIN)/python -m bench.$$b; done

# On DynamoDB Local + s3rver (needs Java; the engines install on first use): 40 concurrent
# edits through one key, and a viral link (write-through vs aggregated, same run).
bench-aws: $(BIN)/.installed $(ENGINES_DIR)/.installed
	DOCPUB_ENGINES_DIR=$(abspath $(ENGINES_DIR)) $(BIN)/python -m bench.hot_key
	DOCPUB_ENGINES_DIR=$(abspath $(ENGINES_DIR)) $(BIN)/python -m bench.viral_link $(ARGS)

# `make run`'s stack under 10,000 publishes (a few minutes; ARGS="--count 1000" for a quick run).
bench-embedded: $(BIN)/.installed
	$(BIN)/python -m bench.embedded $(ARGS)

# AWS: template + zip into $(BUILD_DIR)/, lint it, deploy it (docs/deploy.md).
package: $(BIN)/.installed
	$(BIN)/python -m infra.package --stage $(STAGE) --out $(BUILD_DIR)

lint-infra: package
	$(BIN)/cfn-lint $(BUILD_DIR)/sam.json

deploy: lint-infra
	STAGE=$(STAGE) STACK=$(STACK) BUILD_DIR=$(BUILD_DIR) PYTHON=$(BIN)/python infra/deploy.sh

openapi: $(BIN)/.installed
	$(BIN)/python -m scripts.export_openapi

load: $(BIN)/.installed
	$(BIN)/python -m bench.load $(ARGS)

clean:
	rm -rf build .pytest_cache
