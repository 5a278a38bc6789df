# toycompiler: two commands do everything.
#
#   make lab     start JupyterLab on lessons/ (http://127.0.0.1:8888, PORT=... to change)
#   make test    run tests/ with pytest, then re-run every lesson with nbval
#
# Both set up .venv/ first when needed: a virtual environment with the exact
# versions of requirements.lock and toycompiler installed in editable mode.
# Setup runs once; afterwards it is skipped until requirements.lock,
# pyproject.toml or setup.py change.

SHELL   := /bin/bash
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PORT    ?= 8888
# --nbval compares every cell's output with the output saved in the notebook,
# after the substitutions in lessons/nbval_sanitize.cfg (addresses, timings,
# temporary paths). NBVAL=--nbval-lax only checks that the cells run.
NBVAL   ?= --nbval
# Extra pip arguments for setup, e.g. on a Linux machine without a local CPU
# build of torch: PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"
PIP_ARGS ?=
# Tests and lessons run in JOBS processes (pytest-xdist), one per CPU up to 8: `make test JOBS=1` for one.
JOBS    ?= $(shell $(PYTHON) -c 'import os; print(min(8, os.cpu_count() or 1))' 2>/dev/null || echo 1)

# The stamp's name is a checksum of what setup reads, so changing any of those
# files makes the next command set up again. Whether toycompiler/__init__.py
# exists is part of it: an editable install made before it existed maps
# toycompiler as a namespace package, which would then never run it.
SETUP_INPUTS := requirements.lock pyproject.toml setup.py
SETUP_SUM    := $(shell { cat $(SETUP_INPUTS); ls toycompiler/__init__.py; } 2>/dev/null | cksum | cut -d' ' -f1)
STAMP        := $(VENV)/.installed-$(SETUP_SUM)

# Recipes find the venv's programs first: jupyter, pytest, and `dot` for graphviz.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab test setup bench lock browser-deps clean distclean

lab: $(STAMP)
	@root=lessons; [ -d lessons ] || root=.; \
	flags=; \
	if [ -n "$${CI:-}" ] || { [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ] && [ "$$(uname -s)" != Darwin ]; }; then \
	    flags=--no-browser; \
	fi; \
	[ "$$(id -u)" != 0 ] || flags="$$flags --allow-root"; \
	echo "JupyterLab on http://127.0.0.1:$(PORT)/lab (serving $$root/; Ctrl-C to stop)"; \
	exec $(BIN)/jupyter lab --ServerApp.root_dir=$$root --ip=127.0.0.1 --port=$(PORT) $$flags

# First the design checks: the import contracts of pyproject.toml
# ([tool.importlinter], through .ci/lint_imports.py), the size budget
# (.ci/size.py prints lines of code per folder) and ruff's lint; a breach fails the command,
# the tests still run. pytest's exit code 5 means "no tests collected": not a
# failure while tests/ is still empty. Lessons run in a kernel of this same
# environment (--nbval-current-env); .ci/lesson_times.py prints the time each one took.
# Tests are spread over the JOBS processes as each finishes its last (--dist worksteal); a notebook's cells
# stay together and in order in one process (--dist loadscope), as its kernel's state needs.
test: $(STAMP)
	@status=0; \
	$(BIN)/python .ci/lint_imports.py || { echo "import contracts: BROKEN (see above)"; status=1; }; \
	$(BIN)/python .ci/size.py || status=1; \
	$(BIN)/ruff check --quiet . || { echo "ruff: findings above"; status=1; }; \
	if [ -d tests ]; then \
	    $(BIN)/pytest -n $(JOBS) --dist worksteal tests; rc=$$?; \
	    if [ $$rc -eq 5 ]; then echo "tests/: no tests collected yet"; \
	    elif [ $$rc -ne 0 ]; then status=1; fi; \
	else \
	    echo "tests/: no such folder yet, skipped"; \
	fi; \
	set -- lessons/*.ipynb lessons/solutions/*.ipynb; \
	if [ -e "$$1" ]; then \
	    PYTHONPATH=.ci$${PYTHONPATH:+:$$PYTHONPATH} $(BIN)/pytest -n $(JOBS) --dist loadscope -p lesson_times \
	        $(NBVAL) --nbval-current-env --nbval-sanitize-with lessons/nbval_sanitize.cfg "$$@" || status=1; \
	else \
	    echo "lessons/: no notebooks yet, nbval skipped"; \
	fi; \
	if [ $$status -eq 0 ]; then echo "make test: passed"; else echo "make test: FAILED (see above)"; fi; \
	exit $$status

setup: $(STAMP)

$(STAMP):
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 12))' 2>/dev/null || { \
	    echo "toycompiler runs on Python 3.11 and 3.12; '$(PYTHON)' is another version or missing."; \
	    echo "Name another interpreter: make $(MAKECMDGOALS) PYTHON=python3.11"; exit 1; }
	@echo "Setting up $(VENV)/ from requirements.lock and pyproject.toml (the first time takes a few minutes)"
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(PIP_ARGS) -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@if [ ! -e $(BIN)/dot ] && ! command -v dot >/dev/null; then \
	    ln -s graphviz-pure $(BIN)/dot; echo "No graphviz 'dot' found: $(BIN)/dot runs graphviz-pure"; \
	fi
	@rm -f $(VENV)/.installed-*
	@touch $@
	@echo "Setup done."

bench: $(STAMP)
	$(BIN)/python -m toycompiler.bench

# Rewrite requirements.lock from what .venv/ holds now, keeping its header.
# torch loses its local label (+cpu) and triton is marked Linux-only: the
# header of requirements.lock says why.
lock:
	@[ -x $(BIN)/python ] || { echo "No $(VENV)/ yet: run 'make setup' first."; exit 1; }
	@{ awk '!/^(#|$$)/ { exit } { print }' requirements.lock; \
	   $(BIN)/python -m pip freeze --all --exclude-editable \
	   | grep -v '^pip==' \
	   | sed -e 's/^torch==\([^+]*\)+.*/torch==\1/' \
	         -e 's/^torchvision==\([^+]*\)+.*/torchvision==\1/' \
	         -e 's/^torchvision @ .*torchvision-\([0-9.]*\)-.*/torchvision==\1/' \
	         -e 's/^triton==.*/& ; sys_platform == "linux"/'; \
	 } > requirements.lock.new
	@mv requirements.lock.new requirements.lock
	@echo "requirements.lock: $$(grep -c '==' requirements.lock) pins"

# The browser tests drive Debian's chromium; without it they are skipped.
browser-deps:
	@if [ -x /usr/bin/chromium ]; then \
	    echo "chromium: already installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
	    echo "The browser tests need /usr/bin/chromium (Debian: sudo apt-get install chromium);"; \
	    echo "without it they are skipped."; \
	fi

clean:
	rm -rf build dist *.egg-info .toycompiler_cache test-artifacts .pytest_cache .ruff_cache
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
