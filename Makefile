# Quickstart: `make demo` (creates .venv, installs the pinned runtime requirements, runs
# the whole pipeline on the bundled data), then `make test` (adds the test requirements,
# runs the test suite). Python 3.11 or 3.12: `make demo PYTHON=python3.11` picks one.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Two stamps: the runtime set (requirements.txt) and the test set on top of it
# (requirements-test.txt), so that `make demo` then `make test` installs only the difference.
STAMP_RUNTIME := $(VENV)/.installed-runtime
STAMP_TEST := $(VENV)/.installed-test
PYTEST_ARGS ?=

.PHONY: help venv demo ablation pictures test test-fast lint bench bench-data bench-pretrain \
	bench-serving bazel-test beam-venv test-beam clean check-python check-python-beam

DEMO_DIR ?= runs/demo
ABLATION_DIR ?= runs/ablation
FORCE ?=

help:
	@echo "make demo       SentencePiece -> records -> pretrain -> fine-tune -> SavedModel -> serve,"
	@echo "                on the bundled data (about 3 min on 2 idle cores); FORCE=1 redoes stages"
	@echo "make ablation   the Table 6 ablation grid at small scale (3 seeds, about 70 min on 2 cores)"
	@echo "make pictures   mask, attention and training-curve PNGs from the demo's run"
	@echo "make test       create $(VENV) if missing, install requirements.txt and"
	@echo "                requirements-test.txt, run all tests"
	@echo "make test-fast  the suite without tests marked slow"
	@echo "make lint       ruff with pyproject.toml's rule set (pinned in requirements-test.txt)"
	@echo "make bazel-test the same tests under Bazel (bazel test //...), offline, with $(VENV)'s Python;"
	@echo "                BAZEL_ARGS=--test_tag_filters=-slow skips the slow ones"
	@echo "make test-beam  the Beam pipeline's test in $(VENV_BEAM) (requirements + requirements-beam:"
	@echo "                Beam pins protobuf 6, so it gets a venv of its own)"
	@echo "make bench      forward/training-step tokens/s, base size, seq 512 (vs HuggingFace)"
	@echo "make bench-data create_pretraining_data tokens/s (1 and 2 workers), reader examples/s"
	@echo "make bench-pretrain training tokens/s vs Model Garden XLNetBase (fp32, XLA)"
	@echo "make bench-serving  SavedModel latency on held-out reviews, base size, seq 128 and 512:"
	@echo "                bucketed vs fixed-length export vs HuggingFace (quiet machine, ~30 min)"
	@echo "make clean      remove $(VENV) and caches"
	@echo "Python 3.11 or 3.12 (PYTHON=$(PYTHON)); another: make demo PYTHON=python3.11"

# $(call check_python,VENV): the Python of VENV if it exists, else $(PYTHON), must be 3.11 or
# 3.12 (pyproject.toml's requires-python: numpy 2.4.6 needs 3.11; the pins are tested on
# 3.11 and 3.12). Says which Python it found and how to give another.
define check_python
@py=$(1)/bin/python; made=yes; test -x $$py || { py=$(PYTHON); made=; }; \
if ! command -v $$py >/dev/null 2>&1; then \
  echo "make: no $$py here. xlnet_tf needs Python 3.11 or 3.12; give one with" \
       "make $(or $(MAKECMDGOALS),demo) PYTHON=python3.11 (a name on PATH or a path)" >&2; \
  exit 1; \
fi; \
if ! $$py -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 12))'; then \
  echo "make: $$py is Python $$($$py -c 'import platform; print(platform.python_version())')." \
       "xlnet_tf needs Python 3.11 or 3.12:" \
       "$${made:+remove $(1) (it was made with that Python), then }make $(or $(MAKECMDGOALS),demo)" \
       "PYTHON=python3.11 (a name on PATH or a path)" >&2; \
  exit 1; \
fi
endef

check-python:
	$(call check_python,$(VENV))

venv: $(STAMP_TEST)

# The runtime set only: what `make demo` (and a user's `pip install .`) needs, then this
# checkout itself, editable and without dependencies (they are the pins just installed): the
# console commands (xlnet-train, xlnet-convert, ...) are in $(BIN), and a script anywhere
# can `import xlnet_tf` with $(BIN)/python.
$(STAMP_RUNTIME): requirements.txt pyproject.toml | check-python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps --no-build-isolation -e .
	touch $@

# The test set on top: one pip call with requirements.txt too (so that setuptools<81 holds,
# see requirements-test.txt); what the runtime stamp installed is already satisfied.
$(STAMP_TEST): requirements.txt requirements-test.txt $(STAMP_RUNTIME) | check-python
	$(BIN)/python -m pip install -r requirements.txt -r requirements-test.txt
	touch $@

demo: $(STAMP_RUNTIME)
	$(BIN)/python -m experiments.demo --work_dir=$(DEMO_DIR) $(if $(FORCE),--force,)

ablation: $(STAMP_RUNTIME)
	$(BIN)/python -m experiments.ablation --work_dir=$(ABLATION_DIR)

pictures: $(STAMP_RUNTIME)
	$(BIN)/python -m experiments.plots masks --order=3,2,4,1 --out=$(DEMO_DIR)/masks.png
	$(BIN)/python -m experiments.plots attention --model_dir=$(DEMO_DIR)/pretrain/final \
	    --out=$(DEMO_DIR)/attention.png
	$(BIN)/python -m experiments.plots curves --event_dir=$(DEMO_DIR)/pretrain/train \
	    --out=$(DEMO_DIR)/curves.png

# The suite in TEST_WORKERS processes (pytest-xdist), each taking whole files (so a file's
# module fixtures are made once) in collection order, the longest first (tests/conftest.py
# LONGEST_FILES); TEST_WORKERS=0 runs it in this process. `make test` writes
# the 30 slowest tests to DURATIONS_FILE (tests/durations_file.py).
TEST_WORKERS ?= 2
TEST_PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile \
    --no-loadscope-reorder)
DURATIONS_FILE ?= test-durations.txt

test: $(STAMP_TEST)
	$(BIN)/python -m pytest $(TEST_PARALLEL) -p durations_file \
	    --durations-file=$(DURATIONS_FILE) $(PYTEST_ARGS)

test-fast: $(STAMP_TEST)
	$(BIN)/python -m pytest -m "not slow" $(TEST_PARALLEL) $(PYTEST_ARGS)

lint: $(STAMP_TEST)
	$(BIN)/python -m ruff check .

# The optional Beam pipeline (requirements-beam.txt) in a venv of its own: Beam 2.77 pins
# protobuf < 7, which sentencepiece 0.2.3's generated model module (used by the serving
# and SQuAD code) refuses; the pipeline itself does not need that module.
VENV_BEAM ?= .venv-beam
STAMP_BEAM := $(VENV_BEAM)/.installed-requirements
beam-venv: $(STAMP_BEAM)

check-python-beam:
	$(call check_python,$(VENV_BEAM))

$(STAMP_BEAM): requirements.txt requirements-beam.txt requirements-test.txt | check-python-beam
	test -x $(VENV_BEAM)/bin/python || $(PYTHON) -m venv $(VENV_BEAM)
	$(VENV_BEAM)/bin/python -m pip install -r requirements.txt -r requirements-beam.txt \
	    $$(grep -E '^pytest==' requirements-test.txt)
	touch $(STAMP_BEAM)

# The suite's conftest registers every task kind (tests/conftest.py), which imports the
# serving code and so sentencepiece's model proto: in this venv that needs the protobuf
# check off (requirements-beam.txt says why it is safe). The pipeline itself does not.
test-beam: $(STAMP_BEAM)
	TEMPORARILY_DISABLE_PROTOBUF_VERSION_CHECK=true \
	    $(VENV_BEAM)/bin/python -m pytest tests/data_prep/test_beam_pipeline.py $(PYTEST_ARGS)

# Bazel runs the tests with $(VENV)'s interpreter (third_party/bazel/venv_python.sh finds
# .venv beside the checkout; another VENV is passed to the tests here).
BAZEL ?= bazel
BAZEL_ARGS ?=
bazel-test: $(STAMP_TEST)
	$(BAZEL) test //... $(if $(filter-out .venv,$(VENV)),--test_env=XLNET_TF_PYTHON=$(abspath $(BIN)/python),) $(BAZEL_ARGS)

bench: $(STAMP_TEST)
	$(BIN)/python -m experiments.benchmark_model

bench-data: $(STAMP_TEST)
	$(BIN)/python -m experiments.benchmark_data

bench-pretrain: $(STAMP_TEST)
	$(BIN)/python -m experiments.benchmark_pretrain

bench-serving: $(STAMP_TEST)
	$(BIN)/python -m experiments.benchmark_serving

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
