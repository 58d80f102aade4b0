# The Switchyard image (docs/deployment.md). `make image-check` replays this file and runs
# the result; `hadolint Dockerfile` lints it.
#
# builder: the wheel, from the packages [tool.setuptools.packages.find] declares
# (tests/deploy/test_dockerfile_file_set.py holds the COPY lines to that list).
FROM python:3.11-slim-bookworm AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY workspaces ./workspaces
COPY routing ./routing
COPY presets ./presets
COPY audit ./audit
COPY console ./console
COPY budgets ./budgets
COPY management_api ./management_api
COPY declarative ./declarative
COPY fakeupstream ./fakeupstream
RUN python -m pip wheel --no-deps --wheel-dir /wheels .

# runtime: the wheel and its dependencies in a virtualenv, no source tree and no compiler.
# It runs as uid 10001 and writes only to /tmp and the volume /app/var (development secrets
# when none are given, the SQLite file when no DATABASE_URL is, the trace spool), so a
# read-only root file system works.
FROM python:3.11-slim-bookworm
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/switchyard PATH=/opt/switchyard/bin:$PATH \
    SWITCHYARD_DATA_DIR=/app/var HOME=/tmp
COPY --from=builder /wheels /wheels
RUN python -m venv /opt/switchyard \
    && /opt/switchyard/bin/pip install /wheels/switchyard-*.whl \
    && mkdir -p /app/var && chown 10001:10001 /app/var
WORKDIR /app
USER 10001:10001
VOLUME ["/app/var"]
EXPOSE 8000
# /readyz: the worker has its configuration loaded and is not draining (docs/deployment.md).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2)"]
CMD ["switchyard", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
