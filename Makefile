# Two commands do everything:  make lab   and   make test
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ARGS ?=

.PHONY: lab test lint build-notebooks system-deps clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	@# nbgrader (for the tests) adds instructor menus to JupyterLab; learners don't need them.
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --config=scripts/jupyter_lab_config.py workbook/notebooks/ch00_ring_allreduce.ipynb $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

system-deps:
	@sh scripts/install-system-deps.sh

test: $(STAMP) system-deps lint
	$(BIN)/python -m pytest -n auto

build-notebooks: $(STAMP)
	$(BIN)/workbook build

clean:
	rm -rf $(VENV) build *.egg-info
