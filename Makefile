# Quick start: `make run` (set up, index this repository, retrieve for a sample task), `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CRA := $(VENV)/bin/cra
TASK ?= The BM25 score of a query term that is repeated should count sub-linearly; fix Bm25Index.scores in the lexical index

.PHONY: setup run test test-fast bench bench-scale eval dag clean

$(VENV)/.installed: pyproject.toml
	@echo "setup: installing cra and its dependencies into $(VENV) with pip (a few minutes the first time; pip lists what it fetches)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar on -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	@$(PY) -m compileall -q dataflows drivers > /dev/null  # as pip does for installed packages: a cold `cra` skips compiling

run: setup
	$(CRA) index . -v
	$(CRA) retrieve "$(TASK)" --repo . --budget 4096 -v

test: setup
	$(PY) -m pytest -q

test-fast: setup  # while developing: everything but the end-to-end runs on real-sized code
	$(PY) -m pytest -q -m "not slow"

bench: setup
	$(PY) -m cra.drivers.bench.speed

bench-scale: setup  # index / request growth over generated 1k-100k-file trees and OpenJDK's source (~1 h, 3 GB of cache)
	$(PY) -m cra.drivers.bench.scale --real

bench-findings: setup  # review-findings store: insert and query latency with 10,000 findings
	$(PY) -m cra.drivers.bench.findings

bench-escalation: setup  # escalation store with 10,000 tasks / 100,000 attempts: record and report medians
	$(PY) -m cra.drivers.bench.escalation

bench-memory: setup
	$(PY) -m cra.drivers.bench.memory

bench-diagnose: setup  # cold `cra diagnose`: 5,000 files / 2 GB of logs (sparse) against Django with a KB
	$(PY) -m cra.drivers.bench.diagnose

eval: setup
	$(CRA) evaluate --cases ../shared/eval/dev.jsonl --mirror ../.mirror --out out/eval-dev

dag: setup  # the index, retrieval and evaluation DAGs as SVG (needs Graphviz: apt-get install graphviz)
	$(CRA) dag --out notebooks/dags

clean:
	rm -rf $(VENV) .cra out
