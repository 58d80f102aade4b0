FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY workspaces ./workspaces
COPY routing ./routing
COPY presets ./presets
COPY audit ./audit
COPY console ./console
COPY fakeupstream ./fakeupstream
COPY templates ./templates
COPY manage.py ./
RUN pip install . && mkdir -p var
EXPOSE 8000
# --backlog and --backpressure as in gateway/processes.py gateway_command (why: there).
CMD exec granian --interface asgi --host 0.0.0.0 --port 8000 --workers 2 --loop uvloop --http 1 --no-ws --backlog 4096 --backpressure "${SWITCHYARD_WORKER_CONCURRENCY:-8192}" gateway.asgi:application
