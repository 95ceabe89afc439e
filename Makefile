# Two entry points for people: `make run` and `make test`. Both build .venv once and only
# reinstall when pyproject.toml changes (the stamp files below depend on it).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
BUNDLE_STAMP := $(VENV)/.installed-bundle

.PHONY: run test lint typecheck pytest postgres-server screenshot bundle bundle-check bench audit clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(RUN_STAMP)

$(BUNDLE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[bundle]'
	touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	@packaging/ensure-qt-libs.sh xcb
	$(BIN)/evidence-desk

lint: $(TEST_STAMP)
	$(BIN)/ruff check core desktop tests benchmarks
	$(BIN)/ruff format --check core desktop tests benchmarks

typecheck: $(TEST_STAMP)
	$(BIN)/mypy core desktop

pytest: $(TEST_STAMP) postgres-server
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest

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

test: lint typecheck pytest

# The README's screenshot: the demo workspace, built by the real pipeline, shown by the desk on a
# virtual X screen (Debian's xvfb; offscreen Qt when xvfb-run is missing).
screenshot: $(RUN_STAMP)
	rm -rf .screenshot-ws && mkdir -p docs .screenshot-ws
	$(BIN)/evidence-desk demo --db .screenshot-ws/demo.sqlite3 > /dev/null
	xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/python -m desktop.screenshot docs/screenshot.png \
		--db .screenshot-ws/demo.sqlite3 \
	|| { echo "xvfb-run unavailable or Qt's xcb libraries missing; using Qt's offscreen platform"; \
		QT_QPA_PLATFORM=offscreen $(BIN)/python -m desktop.screenshot docs/screenshot.png --db .screenshot-ws/demo.sqlite3; }
	rm -rf .screenshot-ws

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
