# Setup and CI entry points. `make setup` builds everything from a bare Debian
# 12 machine with python3 and is cheap to repeat: when nothing changed it only
# asks dpkg about three packages and finds two stamps up to date.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := $(CURDIR)/.venv
VENV_PY := $(VENV)/bin/python
# Touched after a successful pip install; redone whenever pyproject.toml is newer.
PIP_STAMP := $(VENV)/.pip-install.stamp
# The same for the benchmarks' extra (datasketch, the peer they are measured against).
BENCH_STAMP := $(VENV)/.pip-bench.stamp
# nltk.download() cannot work offline; scripts/build_nltk_data.py builds this.
export NLTK_DATA := $(CURDIR)/.nltk_data
# CI has no stdin: pip must never prompt.
export PIP_NO_INPUT := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# Sources of the NLTK data (WordNet 3.0, Snowball English stop words), and the headless
# browser the HTML-report test renders in.
DEB_PACKAGES := wordnet-base wordnet-sense-index liblingua-stopwords-perl chromium redis-server
APT_GET ?= apt-get
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup test demo bench deb-packages nltk-data wordmap

setup: deb-packages $(PIP_STAMP) nltk-data

# `apt-get update` only when something is missing: it is the slow part.
deb-packages:
	@missing=(); \
	for p in $(DEB_PACKAGES); do \
	  [[ "$$(dpkg -s "$$p" 2>/dev/null)" == *"Status: install ok installed"* ]] || missing+=("$$p"); \
	done; \
	if (( $${#missing[@]} )); then \
	  echo "Installing Debian packages: $${missing[*]}"; \
	  $(SUDO) $(APT_GET) update -qq; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends "$${missing[@]}"; \
	fi

$(VENV_PY):
	$(PYTHON) -m venv $(VENV)

# The venv's bundled pip 23 installs a trafilatura that cannot import (it
# misses lxml_html_clean), so pip is upgraded before anything else. The editable
# install also compiles the C scanner (dedup/_scan.c -> dedup/_scan.*.so, in place) and dedup/_fast.c.
$(PIP_STAMP): pyproject.toml setup.py dedup/_scan.c dedup/_entities.h dedup/_fast.c | $(VENV_PY)
	$(VENV_PY) -m pip install -q --upgrade pip "setuptools>=77"
	$(VENV_PY) -m pip install -q -e '.[test,es]'
	touch $@

nltk-data: deb-packages $(PIP_STAMP)
	$(VENV_PY) scripts/build_nltk_data.py $(NLTK_DATA)

# With CI=true (.ci/run) the suite also builds the wheel, installs it into a fresh venv outside the
# repo and crawls the sample site with it (tests/test_wheel.py; DEDUP_TEST_WHEEL=1 runs it locally).
test: setup
	$(VENV_PY) -m pytest $(PYTEST_ARGS)

# dedup/data/wordmap.tsv.gz (committed, ~1 MB): what word mapping needs from WordNet, shipped in the
# wheel so an installed package maps words as a `make setup` checkout does. Rebuild after a WordNet change.
wordmap: nltk-data
	$(VENV_PY) scripts/build_wordmap.py

demo: setup
	$(VENV_PY) -m crawler.demo

# Every figure of the benchmark suite in one table (benchmarks/run.py; tens of minutes, and
# ~8.5 GB of out/bench-cache/ the first time). BENCH_ARGS=--quick for a smoke run.
$(BENCH_STAMP): pyproject.toml $(PIP_STAMP)
	$(VENV_PY) -m pip install -q -e '.[test,es,bench]'
	touch $@

bench: setup $(BENCH_STAMP)
	$(VENV_PY) benchmarks/run.py $(BENCH_ARGS)
