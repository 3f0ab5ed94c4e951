# One command sets up and runs each job on a fresh machine: `make demo`, `make test`.
# The virtualenv (.venv) and the npm tools (node_modules) are created when missing or out of date.
# Every install is pinned: requirements/dev.txt and requirements/static.txt (the environments here), and
# layers/shared/requirements.txt (the Lambda layer); `make lock` writes them from the declared ranges.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# uv installs the pinned environments: about 12 s on an empty cache where pip took 66 s (2026-11-27); pip
# itself only bootstraps it, at the version pinned here
UV_VERSION := 0.13.9
UV := $(VENV)/uv/bin/uv
# checkov's pins conflict with aws-sam-cli's and pytest's, so it gets a virtualenv of its own (see pyproject.toml)
STATIC_VENV := $(VENV)/static
STATIC_STAMP := $(STATIC_VENV)/.installed
# `sam build` for the python3.13 runtime needs a python3.13 on PATH; pyenv provides one on these machines.
PY313_BIN := $(shell (pyenv prefix 3.13 2>/dev/null || ls -d $$HOME/.pyenv/versions/3.13* 2>/dev/null) | tail -n 1)/bin
export SAM_CLI_TELEMETRY := 0
# The tests start hundreds of Python processes (stepwise serve, its Lambda workers, CLI commands): with
# PYTHONDONTWRITEBYTECODE set in the caller's environment, each of them compiled every module it imports
# from source again, and pytest rewrote every test module's asserts in each worker. Bytecode lands in
# __pycache__ folders, which git ignores.
unexport PYTHONDONTWRITEBYTECODE
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup setup-browser demo test unit fuzz lint validate static build bench corpus serve clean eval lock bytecode

$(UV):
	$(PYTHON) -m venv $(VENV)/uv
	$(VENV)/uv/bin/pip install -q uv==$(UV_VERSION) 2>&1 | grep -v "^WARNING: Location" || true
	$(UV) --version

$(PY_STAMP): pyproject.toml requirements/dev.txt requirements/overrides.txt | $(UV)
	test -x $(BIN)/python || $(UV) venv -q --allow-existing --python $(PYTHON) --seed $(VENV)
	# --no-deps: the lock is complete, and resolved with requirements/overrides.txt, whose versions a dependency
	# declares it does not take (installing with resolution would refuse them again)
	$(UV) pip install -q --python $(BIN)/python --require-hashes --no-deps -r requirements/dev.txt
	$(UV) pip install -q --python $(BIN)/python --no-deps -e .
	# nothing resolved what was installed: a dependency the lock lacks, or a conflict overrides.txt does not name,
	# fails here (`uv pip check`, less the overridden conflicts)
	$(BIN)/python requirements/check_installed.py $(UV) $(BIN)/python
	$(BIN)/python -c "import stepwise, moto, aws_lambda_powertools, samcli"
	touch $@

# npm ci installs package-lock.json's versions exactly, and fails when package.json and the lock disagree
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(STATIC_STAMP): requirements/static.txt requirements/checkov_parse_tables.py | $(UV)
	test -x $(STATIC_VENV)/bin/python || $(UV) venv -q --python $(PYTHON) $(STATIC_VENV)
	$(UV) pip install -q --python $(STATIC_VENV)/bin/python --require-hashes -r requirements/static.txt
	# checkov's JSONPath parser builds its parse tables again for every expression: 27 of its 34 s on template.yaml
	$(STATIC_VENV)/bin/python requirements/checkov_parse_tables.py
	$(STATIC_VENV)/bin/checkov --version
	touch $@

# the pins, from pyproject.toml's ranges (dev, and the static extra alone) and the layer's requirements.in
# (for the Lambda runtime, python3.13 on arm64, at the versions the tests ran); an existing pin is kept
# unless its range no longer admits it (delete a line, or the file, to move it on). The environments here are
# installed with --require-hashes: each file's hash is checked, so a version re-uploaded or served by another
# index cannot slip in. The layer's pins carry no hashes: `sam build` runs its own pip over them.
lock: | $(UV)
	$(UV) pip compile -q --python $(PYTHON) --generate-hashes --custom-compile-command "make lock" \
		--override requirements/overrides.txt pyproject.toml --extra dev -o requirements/dev.txt
	$(PYTHON) -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['static']))" \
		| $(UV) pip compile -q --python $(PYTHON) --generate-hashes --custom-compile-command "make lock" - -o requirements/static.txt
	$(UV) pip compile -q --python-version 3.13 --python-platform aarch64-manylinux_2_28 -c requirements/dev.txt \
		--custom-compile-command "make lock" layers/shared/requirements.in -o layers/shared/requirements.txt

setup: $(PY_STAMP) $(NODE_STAMP)

# The console's browser tests (tests/browser) drive Debian's Chromium through Playwright's Python package;
# Playwright's own browser download is not used. Installed when missing, as root (CI and these machines);
# elsewhere, install `chromium` yourself or point STEPWISE_CHROMIUM at one.
setup-browser:
	@if [ -n "$$STEPWISE_CHROMIUM" ] || command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "make: the browser tests need Chromium: install Debian's chromium (as root) or set STEPWISE_CHROMIUM" >&2; exit 1; fi

demo: setup
	$(BIN)/stepwise demo

serve: setup
	$(BIN)/stepwise serve --demo

# the demo's eval suite (evals/demo.yaml, docs/evals.md) through the real state machine; JUnit XML in .stepwise/
eval: setup
	mkdir -p .stepwise
	$(BIN)/stepwise eval evals/demo.yaml --config config/demo.yaml --junit .stepwise/eval-demo.xml

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	# every handler is a module named `app`, so each is checked on its own
	for handler in functions/*/app.py; do $(BIN)/mypy --no-namespace-packages "$$handler" || exit 1; done

validate: setup
	$(BIN)/sam validate --lint
	# the definition's one unquoted placeholder (the machine's TimeoutSeconds, a number) as each workflow type renders it
	for timeout in 300 3600; do \
		node_modules/.bin/asl-validator --json-definition "$$(sed "s/\$${MachineTimeoutSeconds}/$$timeout/" statemachine/agent.asl.json)" || exit 1; \
	done

# Lambda's /var/task and /opt are read-only, so Python cannot cache bytecode there: without it in the package,
# every cold start compiles each module it imports. checked-hash bytecode stays valid whatever the zip does
# to file times, and is never used for a source it was not compiled from.
build: setup
	PATH="$(PY313_BIN):$$PATH" $(BIN)/sam build --parallel
	PATH="$(PY313_BIN):$$PATH" python3.13 -m compileall -q -j 0 --invalidation-mode checked-hash .aws-sam/build

# cfn-lint and checkov on the template; every checkov finding is fixed or skipped in template.yaml with a reason
static: $(PY_STAMP) $(STATIC_STAMP)
	$(BIN)/cfn-lint template.yaml
	$(STATIC_VENV)/bin/checkov --file template.yaml --framework cloudformation --skip-download --compact --quiet

# tests/static runs checkov from $(STATIC_VENV); tests/browser drives Chromium. Three workers on two cores:
# the end-to-end tests spend much of their time waiting (model latencies, polls), and two left the CPUs a
# third idle (9:08 against 7:40 for the whole suite, measured 2026-11-25). Work stealing: a worker that
# runs out takes half of another's queue, so the slow end-to-end modules do not finish alone at the end.
# Four workers since 2026-11-27: issues 31-33 added servers, browsers and protocol clients that mostly wait.
# The slowest tests are printed, so a CI log says where the time goes.
unit: setup setup-browser $(STATIC_STAMP)
	$(BIN)/pytest -q -n 4 --dist worksteal --durations=25 -p tests.faults.report -p tests.fuzz.pipeline_report

# Each test worker imports every test module and all they import. On a fresh clone there is no bytecode yet
# (nor pytest's rewritten test modules), and the four workers, starting together, each compiled all of it:
# about 30 s of CPU each, against 9 s from bytecode (collection alone, measured 2026-11-28). One collection
# beforehand, beside lint, validate and build, writes it once. A collection error shows in `unit`'s run.
bytecode: setup
	$(BIN)/pytest --collect-only -q -p no:cacheprovider | tail -n 1

# checkov and cfn-lint run as tests (tests/static), so `test` installs checkov without running `static`'s
# copies of them. lint, validate and build run side by side before the tests: mypy works on one core, and
# `sam build` mostly waits for its downloads
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target lint validate build bytecode $(STATIC_STAMP)
	$(MAKE) --no-print-directory unit

# the API fuzzed from its own OpenAPI document, the tool argument properties and the whole pipeline (arbitrary
# model replies and tool answers): 500 examples each, 50 pipeline runs (`unit` runs 25/200/20); and the
# properties of the protocols, the intent answer and plain URLs (`unit` runs 100/100/150)
FUZZ_PROPERTIES := tests/unit/protocols/test_protocol_properties.py tests/unit/intent/test_intent_parsing.py \
	tests/unit/config/test_plain_urls.py
fuzz: setup
	STEPWISE_FUZZ_EXAMPLES=500 $(BIN)/pytest -q tests/fuzz $(FUZZ_PROPERTIES)

bench: setup
	$(BIN)/python -m bench

# pass rate per protocol on the corpus of real completions (tests/corpus); `unit` fails below 97%
corpus: setup
	$(BIN)/python -m tests.corpus

clean:
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache
