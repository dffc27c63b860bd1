# Everything a fresh machine with Python 3 and make needs is set up by these targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

MIN_VENV := .venv-min

.PHONY: test lint demo demo-cluster demo-shuffle bench clean test-min-versions screenshot

# Two distributions in one namespace (docs/architecture.md): the SDK (ldp-telemetry, the
# root pyproject.toml) and the collector with the shuffler (ldp-telemetry-collector,
# aggregator/pyproject.toml), both editable, with every extra and the developer tools.
$(STAMP): pyproject.toml aggregator/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e './aggregator[postgres,parquet,archive]'
	touch $(STAMP)

# System tools the suite runs for real: curl (the READMEs' examples), nginx and openssl
# (docs/operations.md's TLS proxy), chromium (the dashboard's browser tests, through
# Playwright: Debian's build, never a downloaded one). Installed as root with apt-get when
# missing; otherwise make test stops and says which.
TEST_TOOLS = curl nginx openssl chromium
# The suite runs on two workers (pytest-xdist, pinned; each its own PostgreSQL server,
# collectors and ports, scheduled by tests/support/workers.py). TEST_WORKERS=0 runs it in one
# process (test-min-versions too); PYTEST_ARGS passes more, e.g. PYTEST_ARGS='-x tests/shared'.
TEST_WORKERS ?= 2
PYTEST_WORKERS = -n $(TEST_WORKERS)
test: $(STAMP)
	@missing=""; for tool in $(TEST_TOOLS); do command -v $$tool >/dev/null \
	  || [ -x /usr/sbin/$$tool ] || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq \
	    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
	  || { echo "make test: install$$missing (the suite runs them)" >&2; exit 1; }; fi
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The TypeScript SDK's tests (tests/sdk_js) need node and sdk-js/node_modules: Debian's
# nodejs and npm (apt-get as root when missing), then npm ci from the committed lock file.
SDK_JS_MODULES := sdk-js/node_modules/.package-lock.json
test: $(SDK_JS_MODULES)
$(SDK_JS_MODULES): sdk-js/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || { [ "$$(id -u)" = 0 ] \
	  && command -v apt-get >/dev/null && apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } \
	  || { echo "make test: install nodejs and npm (the TypeScript SDK's tests run them)" >&2; exit 1; }
	cd sdk-js && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The Java SDK (sdk-java/, Maven, offline from the local repository): its JUnit tests, the
# jar, and the classes tests/sdk_java runs. A machine without Maven or a JDK stops here and
# says so (never a silent skip).
.PHONY: sdk-java
test: sdk-java
sdk-java:
	@command -v mvn >/dev/null && command -v java >/dev/null \
	  || { echo "make test: install Maven 3.8+ and a JDK 11+ (the Java SDK's tests run them: apt-get install maven openjdk-17-jdk-headless)" >&2; exit 1; }
	cd sdk-java && mvn -o -q -B verify

# The whole system end to end: collector, tasks, 100,000 simulated devices, estimates.
# DEMO_ARGS passes options, e.g. make demo DEMO_ARGS="--devices 20000".
demo: $(STAMP)
	$(BIN)/python -m demo $(DEMO_ARGS)

# The README's picture of the dashboard, docs/dashboard.png: a throwaway collector seeded
# over HTTP, logged in to and shot in Debian's Chromium (installed as root when missing).
screenshot: $(STAMP)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || { echo "make screenshot: install chromium (apt-get install chromium)" >&2; exit 1; }
	$(BIN)/python -m demo.dashboard --out docs/dashboard.png

# Devices -> shuffler -> collector: estimates with each report's local and the central epsilon.
demo-shuffle: $(STAMP)
	$(BIN)/python -m demo.shuffle $(DEMO_ARGS)

# Two collector nodes on one (throwaway, bundled) PostgreSQL, as behind a load balancer.
demo-cluster: $(STAMP)
	$(BIN)/python -m demo.cluster $(DEMO_ARGS)

# Benchmarks side by side with pure-ldp (installed into bench-results/.baseline-venv);
# the table is printed and written to bench-results/. BENCH_ARGS=--quick for smaller sizes.
# The serving rows use wrk (a C load generator) when it is installed: as root with apt-get
# it is installed here; otherwise they fall back to a Python load generator and say so.
bench: $(STAMP)
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && apt-get install -y -qq wrk >/dev/null; } \
	  || echo "make bench: wrk not installed; the serving rows use the Python load generator"
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

LINTED = shared client aggregator simulations demo benchmarks protocol tests .ci
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

# The SDK, shared, collector and shuffler tests on the oldest versions pyproject.toml
# declares (not the dashboard's: its browser test needs Playwright, which that venv lacks).
# py-spy: a server test's failure message shows a stuck worker's Python stacks with it.
test-min-versions:
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PYTHON) .ci/min_requirements.py > $(MIN_VENV)/requirements.txt
	$(MIN_VENV)/bin/python -m pip install --quiet -r $(MIN_VENV)/requirements.txt \
		pytest pytest-timeout 'pytest-xdist>=3.8,<3.9' hypothesis scipy pgserver jsonschema py-spy
	$(MIN_VENV)/bin/python -m pip install --quiet --no-deps -e . -e ./aggregator
	$(MIN_VENV)/bin/python -m pip list --format=freeze | grep -iE '^(numpy|mmh3|rfc8785|cryptography|requests|urllib3|flask|gunicorn|granian|prometheus.client|pyarrow|psycopg|psycopg.pool|dask|distributed)=='
	$(MIN_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_WORKERS) tests/shared tests/client tests/aggregator \
		tests/shuffler --ignore=tests/aggregator/dashboard

clean:
	rm -rf $(VENV) $(MIN_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
