# One task runner for people and CI. Every target bootstraps .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The generated package and the hand-written runtime, installed editable once generated/ exists.
PACKAGES := $(VENV)/.packages-stamp

.PHONY: setup generate check validate compat lint format test pytest quick fuzz bench golden docs serve dist clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

$(PACKAGES): $(STAMP) generated/python/pyproject.toml runtime/pyproject.toml
	$(PY) -m pip install --quiet --disable-pip-version-check -e generated/python -e runtime
	touch $@

# What some tests need beyond .venv (Node and the pinned npm tools, Rust, Chromium, a PostgreSQL server): the
# scripts CI runs before `make test`, each safe to run twice. They install system packages, so run it as root.
setup: ## install and start what the tests need beyond .venv (as root); without it those tests skip, and say so
	@for step in .ci/setup.d/*.sh; do echo "== setup: $$step"; bash "$$step" || exit 1; done

# Generating also installs both packages editable (once), so the README's runtime commands work straight after it.
generate: $(STAMP) ## validate spec/, write generated/ and site/reference/, install both packages into .venv
	$(PY) -m generator generate
	@$(MAKE) --no-print-directory $(PACKAGES)

# make exits 2 whenever a recipe fails; the command's own status (0 up to date, 1 drift, 2 spec error) is the
# number in make's "Error N" line, and `$(PY) -m generator check` returns it directly.
check: $(STAMP) ## up to date or not (files named, fix printed); make's status: 0, or 2 on drift or a spec error
	$(PY) -m generator check

validate: $(STAMP)
	$(PY) -m generator validate

compat: $(STAMP) ## breaking changes since the newest v* tag (before one: ACP's published stable schema); make's status 0 or 2
	$(PY) -m generator diff

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# The suite runs as three pytest processes side by side, so that on two cores `make test` takes about the longest of
# them rather than their sum (most of the suite waits on other processes: Agents, Node, PostgreSQL, HAProxy,
# Chromium): the maintainer journey (one long test, minutes of generating and testing in a copy of its own); the
# runtime half (the runtime's tests, the interop tests against the TypeScript SDK, the cluster behind HAProxy); and
# the rest, whose report is printed live. The other two reports are printed after it, and any one failing fails the
# target. Tests that share the PostgreSQL database use fresh session ids, so the halves never see each other's rows.
JOURNEY_LOG := build/journey.log
RUNTIME_LOG := build/pytest-runtime.log
RUNTIME_HALF := runtime/tests tests/interop tests/cluster
pytest: $(PACKAGES)
	@mkdir -p build
	@$(PY) -m pytest tests/journey > $(JOURNEY_LOG) 2>&1 & journey=$$!; \
	$(PY) -m pytest $(RUNTIME_HALF) > $(RUNTIME_LOG) 2>&1 & runtime=$$!; \
	trap 'kill $$journey $$runtime 2>/dev/null' INT TERM; \
	$(PY) -m pytest tests --ignore=tests/journey $(addprefix --ignore=,$(filter tests/%,$(RUNTIME_HALF))); suite=$$?; \
	wait $$runtime; half=$$?; \
	echo "== the runtime half, run beside the rest ($(RUNTIME_LOG)):"; cat $(RUNTIME_LOG); \
	wait $$journey; walk=$$?; \
	echo "== the maintainer journey, run beside the suite ($(JOURNEY_LOG)):"; cat $(JOURNEY_LOG); \
	for status in $$suite $$half $$walk; do if [ $$status -ne 0 ]; then exit $$status; fi; done

test: lint check compat pytest ## what CI runs

# A maintainer's inner loop after a spec edit: what the maintainer journey checks after each of its steps, on the work
# tree (generate, the drift check, the compat gate, the upstream audit, then the test modules that read the spec, as
# tests/journey/readers.py lists them). Minutes, not the whole suite: `make test` stays what CI runs.
quick: $(PACKAGES) ## after a spec edit: generate, check, compat, audit and the tests that read the spec (minutes)
	$(PY) -m generator generate
	$(PY) -m generator check
	$(PY) -m generator diff
	$(PY) -m generator audit
	$(PY) -m pytest -q -p no:cacheprovider $$($(PY) -m tests.journey.readers)

# The fuzz tests (pytest marker `fuzz`) with many draws; each prints its counts at the end. Set FUZZ_DRAWS to
# change how many; `make test` runs the same tests with a few hundred draws in all.
FUZZ_DRAWS ?= 2000
fuzz: $(PACKAGES) ## property tests with thousands of draws, counts printed at the end
	ACP_FUZZ_DRAWS=$(FUZZ_DRAWS) $(PY) -m pytest -m fuzz -q

golden: $(STAMP) ## regenerate the expected outputs of the fixture tests (review the diff!)
	$(PY) -m tests.regen
	$(PY) -m tests.diff.regen

bench: $(PACKAGES) ## speed ratios against references measured in the same run
	$(PY) -m bench

# NO_MKDOCS_2_WARNING: silences the theme's banner about a future MkDocs; it is not a build warning.
docs: $(STAMP) generate
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

serve: $(STAMP) generate
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

# Wheels and sdists of both distributions into dist/, each checked by `twine check --strict`.
DIST := dist
dist: $(STAMP) check ## build acp-v2-schema and acp-v2-runtime (wheel and sdist each) into dist/
	rm -rf $(DIST)
	$(PY) -m build --outdir $(DIST) generated/python
	$(PY) -m build --outdir $(DIST) runtime
	$(PY) -m twine check --strict $(DIST)/*

clean:
	rm -rf build dist .cache .pytest_cache .ruff_cache
