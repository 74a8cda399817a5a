# The main job in one command: install rsigym in .venv and run the offline TRACE quickstart.
PYTHON ?= python3
VENV := .venv

.PHONY: demo test clean-demo

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e .
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/rsigym run trace_quickstart --out runs/trace_quickstart

test: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -e ".[test,ray]"
	$(VENV)/bin/python -m pytest -q -ra

clean-demo:
	rm -rf runs/trace_quickstart
