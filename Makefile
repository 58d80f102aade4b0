# Switchyard — `make run` and `make test` do all the set-up on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install run test test-profile test-soak test-deep test-postgres lint fmt migrate bench bench-flood bench-unknown-keys bench-instructions bench-trees simulate smart-sample fakeupstream worker image-check k8s-check rollout-test up clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py bootstrap --demo --key-file var/demo-key
	$(BIN)/python manage.py rundemo --key-file var/demo-key

# The suite on every core (TEST_WORKERS=auto: 2 here), a file's tests on one worker so its
# module fixtures start once; random order (pytest-randomly; -p no:randomly to turn it off).
TEST_WORKERS ?= auto
XDIST = -n $(TEST_WORKERS) --dist loadfile
# Bytecode caches on even where the environment turns them off (PYTHONDONTWRITEBYTECODE):
# without them every test process and every gateway it starts compiles each module again,
# pytest's assertion rewriting of the plugins included (collection 15 s instead of 10).
PYTEST = PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

test: install
	$(PYTEST) $(XDIST) $(PYTEST_ARGS)

# Where the suite's time goes: per module and per cause (tests/profile.py; docs/testing.md).
test-profile: install
	$(PYTEST) $(XDIST) -p tests.profile --durations=30 $(PYTEST_ARGS)

# The live suites five times in a row, each in a new random order: any failure stops it.
test-soak: install
	for run in 1 2 3 4 5; do \
	  echo "== live run $$run of 5"; \
	  $(PYTEST) $(XDIST) -m live -q $(PYTEST_ARGS) || exit 1; \
	done

# The property tests at their full example counts (tests/properties.py).
test-deep: install
	SWITCHYARD_TEST_DEEP=1 $(PYTEST) $(XDIST) $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

# One worker holding FLOOD_ARGS (default --streams 5000) streams that wait for a first token.
bench-flood: install
	$(BIN)/python -m bench.flood $(FLOOD_ARGS)

# Random well-formed keys, all 401: what looking up a key the snapshot lacks costs (UNKNOWN_ARGS).
bench-unknown-keys: install
	$(BIN)/python -m bench.unknown_keys $(UNKNOWN_ARGS)

# Instructions per chat request under valgrind: an A/B CPU steal cannot blur
# (INSTR_ARGS, e.g. --tree ../other-checkout).
bench-instructions: install
	$(BIN)/python -m bench.instructions $(INSTR_ARGS)

# Another checkout's gateway beside this one's, in ABBA rounds (TREES_ARGS, e.g. --base ../other).
bench-trees: install
	$(BIN)/python -m bench.trees $(TREES_ARGS)

simulate: install
	$(BIN)/python -m routing.sim $(SIM_ARGS)

smart-sample: install
	$(BIN)/python -m bench.smart_sample $(SAMPLE_ARGS)

worker: install
	$(BIN)/celery -A gateway worker --loglevel INFO

# The Dockerfile replayed and its install run as the image runs it, on PostgreSQL and Redis
# on 127.0.0.1 (IMAGE_CHECK_POSTGRES, IMAGE_CHECK_REDIS, IMAGE_CHECK_BROKER; docs/deployment.md).
image-check: install
	$(BIN)/python deploy/check_image.py

# Every kustomize overlay rendered and validated against a pinned Kubernetes (docs/kubernetes.md).
k8s-check: install
	$(BIN)/python deploy/check_manifests.py

# A rolling restart under load: three replicas on PostgreSQL and Redis behind HAProxy
# (apt-get install haproxy), each drained and started again, a route deployed half way
# (deploy/rollout.py; ROLLOUT_ARGS, e.g. --seconds 20 in CI, --outage redis|postgres
# to take a dependency away instead, --pgbouncer for the fleet through PgBouncer,
# --redis-cluster for it on a Redis Cluster of three masters;
# docs/deployment.md).
rollout-test: install
	$(BIN)/python -m deploy.rollout $(ROLLOUT_ARGS)

up:
	docker compose up -d postgres redis

clean:
	rm -rf $(VENV) var/*.sqlite3* var/static
