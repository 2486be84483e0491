# Two commands do everything:  make lab   and   make test
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_STAMP := $(VENV)/.installed-lab
LEARNER_DIR ?= my-notebooks
ARGS ?=

.PHONY: lab instructor test lint build-notebooks system-deps clean

# The learner's set-up: the package and JupyterLab, nothing else (no test tools).
$(LAB_STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[lab]"
	touch $(LAB_STAMP)

# The developer's: the learner's plus pytest, playwright, mypy, ruff, nbgrader, hypothesis.
$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	@# nbgrader (for the tests) adds instructor menus to JupyterLab; learners don't need them.
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
	touch $(STAMP) $(LAB_STAMP)

# JupyterLab serves only $(LEARNER_DIR): the learner notebooks, copied there once (your
# answers are never overwritten; delete a file to get a fresh copy). The instructor
# notebooks, with their solutions, stay out of reach of the file browser.
# The widgets' state is saved with a notebook, so a reopened notebook shows its cards and
# explorers as they were (until its cells run again) instead of "model not found".
lab: $(LAB_STAMP)
	@mkdir -p $(VENV)/share/jupyter/lab/settings
	@cp scripts/lab_settings_overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	@mkdir -p $(LEARNER_DIR)
	@for nb in workbook/notebooks/*.ipynb; do \
	  [ -e "$(LEARNER_DIR)/$$(basename $$nb)" ] || cp "$$nb" "$(LEARNER_DIR)/"; done
	$(BIN)/jupyter lab --config=scripts/jupyter_lab_config.py \
	  --ServerApp.root_dir=$(LEARNER_DIR) \
	  --LabApp.default_url=/lab/tree/ch00_ring_allreduce.ipynb $(ARGS)

# The instructor's set-up: the learner's, plus bubblewrap (the grading sandbox) through
# the system packages script. `workbook release` and `workbook grade` then run from .venv/bin.
instructor: $(LAB_STAMP)
	@sh scripts/install-system-deps.sh sandbox
	@$(BIN)/workbook --help >/dev/null
	@echo "Ready: $(BIN)/workbook release ... and $(BIN)/workbook grade ... (docs/instructors.md)"

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
