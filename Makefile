# One command per job; each sets up what it needs in .venv first.
#   make demo       the main job: the offline TRACE quickstart
#   make test       the test suite (Docker tests skip without an engine, fail under RSIGYM_REQUIRE_DOCKER=1)
#   make typecheck  mypy over the package as installed, cached in .cache/mypy
#   make docs       the docs site from docs/ into site/ (mkdocs --strict: a warning fails the build)
#   make sandbox    build and check the sandbox image (needs Docker and debootstrap)
PYTHON ?= python3
VENV := .venv

.PHONY: demo test test-image typecheck docs sandbox clean-demo

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e ".[test,ray,serve]"
	touch $@

$(VENV)/.installed-docs: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e ".[docs]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/rsigym run trace_quickstart --out runs/trace_quickstart

# Tests run in TEST_WORKERS processes (pytest-xdist), a test file per process at a time: many
# tests wait on Docker, subprocesses or sockets, so 4 processes keep 2 cores busy (on the 2-core
# development machine, clean clone, with Docker: 494 s for that part with 4, 511 s with 3). The Ray tests
# (marker `ray`) then run alone: their 1-CPU local cluster nodes missed their start-up deadlines
# beside other test files, and run beside the xdist part they saved 16 s of 582 while a timing test
# failed under the load (docs/testing.md). TEST_WORKERS=0 runs everything in one process, one after another.
# PYTHONDONTWRITEBYTECODE, where the shell sets it, is cleared for the tests: pytest then keeps each
# test module with its assertions rewritten as bytecode (in __pycache__, ignored by git), and a worker
# collects the suite in 11.5 CPU-seconds instead of 17.2 from the second run on.
TEST_WORKERS ?= 4
test: $(VENV)/.installed-test
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/python -m pytest -q -ra --durations=25 -n $(TEST_WORKERS) --dist loadfile -m "not ray and not image"
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/python -m pytest -q -ra --durations=10 -p no:xdist -m ray tests/core

# The serving image's test builds a 2.5 GB image (about 4 minutes the first time): apart from make test.
test-image: $(VENV)/.installed-test
	$(VENV)/bin/python -m pytest -q -ra -p no:xdist -m image

typecheck: $(VENV)/.installed-test
	PYTHON=$(VENV)/bin/python .ci/typecheck

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

sandbox: $(VENV)/.installed
	$(VENV)/bin/rsigym sandbox build
	$(VENV)/bin/rsigym sandbox check

clean-demo:
	rm -rf runs/trace_quickstart
