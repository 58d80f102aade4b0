"""`make image-check`: the Dockerfile proven without a container engine (R-OPS-1,
docs/deployment.md "The image").

1. Static: two stages, the last copying only the builder's wheel, a fixed non-root numeric
   USER, a HEALTHCHECK, CMD in exec form, no secret in ENV or ARG, the data folder a
   VOLUME, and a .dockerignore that keeps the checkout's .git, .venv, var/ and .env out.
2. Replay (deploy/image_replay.py) into a fresh folder outside the checkout.
3. Run the replayed install alone, as uid 10001, from the image's WORKDIR, on production
   settings, PostgreSQL and Redis on 127.0.0.1: `check --deploy`, `migrate --check` (fails,
   then passes after `migrate`: the Kubernetes init containers wait on it), `apply` and
   `createkey`, the gateway as CMD starts it, the HEALTHCHECK, a chat completion and a
   stream through the fake upstream, the console's sign-in page and a static file, and the
   Celery worker running a task beat sent.

Everything the run writes must land in /tmp or the volume: the replayed root is root's and
not writable by uid 10001, as with a read-only root file system."""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import psycopg
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deploy.image_replay import Image, Stage, ignored, parse, read_dockerignore, replay  # noqa: E402
from fakeupstream.process import free_port  # noqa: E402

SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|PEPPER|ENCRYPTION|API_KEY", re.I)
NEVER_SENT = (".git/config", ".venv/bin/python", "var/switchyard.sqlite3", ".env", "tests/x.py")
UPSTREAM_KEY_ENV = "SWITCHYARD_IMAGE_CHECK_UPSTREAM_KEY"


def static_problems(stages: list[Stage], dockerignore_rules: list) -> list[str]:
    """What the Dockerfile and .dockerignore get wrong, read without building anything."""
    problems = []
    if len(stages) < 2:
        problems.append("one stage: the runtime would hold the build's tools and sources")
    final = stages[-1].instructions if stages else []
    for item in final:
        if item.name == "COPY" and "--from=" not in item.value:
            problems.append(f"the runtime stage copies from the build context: COPY {item.value}")
    users = [item.value.strip() for item in final if item.name == "USER"]
    uid = users[-1].split(":")[0] if users else ""
    if not uid.isdigit() or int(uid) == 0:
        problems.append(f"the runtime stage must end on a numeric non-root USER, not {uid!r}")
    if not any(item.name == "HEALTHCHECK" for item in final):
        problems.append("no HEALTHCHECK")
    cmds = [item.value for item in final if item.name == "CMD"]
    if not cmds or not cmds[-1].startswith("["):
        problems.append("CMD must be in exec (JSON) form, so the server gets SIGTERM itself")
    if not any(item.name == "VOLUME" for item in final):
        problems.append("no VOLUME for the data folder")
    for stage in stages:
        for item in stage.instructions:
            if item.name in {"ENV", "ARG"}:
                for word in item.value.split():
                    name = word.split("=", 1)[0]
                    if SECRET_NAME.search(name):
                        problems.append(f"{item.name} {name}: a secret baked into the image")
    for path in NEVER_SENT:
        if not ignored(path, dockerignore_rules):
            problems.append(f".dockerignore sends {path} to the build")
    return problems


def production_env(image: Image, database_url: str, redis_url: str, broker_url: str) -> dict:
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    return {
        **image.env,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "SWITCHYARD_ENCRYPTION_KEYS": f"k1:{key}",
        "SWITCHYARD_KEY_PEPPER": secrets.token_urlsafe(32),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "SWITCHYARD_SHARED_STATE_PREFIX": f"switchyard-image-check-{secrets.token_hex(6)}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SWITCHYARD_SSL_REDIRECT": "true",
        "SWITCHYARD_HSTS_SECONDS": "31536000",
        "SWITCHYARD_LIVE_ROLLUP_S": "1",
        UPSTREAM_KEY_ENV: "image-check-upstream-key",
    }


def as_image_user(image: Image, argv: list[str]) -> list[str]:
    uid, _, gid = (image.user or "").partition(":")
    return ["setpriv", f"--reuid={uid}", f"--regid={gid or uid}", "--clear-groups", *argv]


def run(image: Image, env: dict, *argv: str, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        as_image_user(image, list(argv)),
        cwd=image.workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if ok and result.returncode != 0:
        raise SystemExit(f"`{' '.join(argv)}` failed ({result.returncode}):\n{result.stderr}")
    return result


@contextlib.contextmanager
def started(image: Image, env: dict, argv: list[str], log: Path) -> Iterator[Callable[[], str]]:
    """A long-running process of the image; yields a reader of its log so far, which
    fails the check once the process has exited."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            as_image_user(image, argv),
            cwd=image.workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

        def read() -> str:
            text = log.read_text(errors="replace")
            if process.poll() is not None:
                raise SystemExit(f"`{' '.join(argv)}` exited {process.returncode}:\n{text[-3000:]}")
            return text

        try:
            yield read
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for(
    what: str, condition: Callable[[], bool], timeout_s: float, log: Callable[[], str]
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        log()  # fails at once when the process awaited has exited
        with contextlib.suppress(httpx.HTTPError, OSError):
            if condition():
                return
        time.sleep(0.1)
    raise SystemExit(f"waited {timeout_s:.0f} s for {what}\n{log()[-3000:]}")


def require(holds: bool, failure: str) -> None:
    if not holds:
        raise SystemExit(f"image-check: {failure}")


def with_port(argv: list[str], port: int) -> list[str]:
    """The image's command on a free port of 127.0.0.1 (8000 and 0.0.0.0 are the image's)."""
    swapped = {"8000": str(port), "0.0.0.0": "127.0.0.1"}
    return [swapped.get(arg, arg.replace(":8000/", f":{port}/")) for arg in argv]


def catalog(upstream_url: str) -> dict:
    return {
        "providers": [
            {
                "slug": "fake",
                "name": "fake",
                "api_style": "openai",
                "base_url": upstream_url,
                "api_key_env": UPSTREAM_KEY_ENV,
            }
        ],
        "models": [
            {"slug": "image-check/model", "capabilities": ["text"], "context_window": 32768}
        ],
        "endpoints": [
            {
                "id": "fake-ep",
                "provider": "fake",
                "model": "image-check/model",
                "upstream_model": "fake-up",
                "region": "us-east-1",
                "price": {"input": 1, "output": 1},
            }
        ],
        "workspaces": [{"slug": "image-check", "name": "image-check", "policy": {}}],
    }


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    name = f"switchyard_image_check_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield re.sub(r"/[^/]*$", f"/{name}", admin_url)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def exercise(image: Image, env: dict, scratch: Path) -> None:
    step("check --deploy on production settings")
    run(image, env, "switchyard", "check", "--deploy", "--fail-level", "WARNING")
    if run(image, env, "switchyard", "migrate", "--check", ok=False).returncode == 0:
        raise SystemExit("`migrate --check` passed on an empty database")
    step("migrate on a fresh PostgreSQL database")
    run(image, env, "switchyard", "migrate", "--noinput")
    run(image, env, "switchyard", "migrate", "--check")
    upstream_port, gateway_port = free_port(), free_port()
    with started(
        image,
        env,
        ["python", "-m", "fakeupstream", "--port", str(upstream_port)],
        scratch / "fakeupstream.log",
    ):
        config = scratch / "catalog.yaml"
        config.write_text(yaml.safe_dump(catalog(f"http://127.0.0.1:{upstream_port}/v1")))
        config.chmod(0o644)
        run(image, env, "switchyard", "apply", "-f", str(config))
        key = run(image, env, "switchyard", "createkey", "--workspace", "image-check").stdout
        require(bool(image.cmd and image.healthcheck), "the image has no CMD or HEALTHCHECK")
        command = with_port(image.cmd or [], gateway_port)
        step(f"the image's CMD: {' '.join(image.cmd or [])}")
        with started(image, env, command, scratch / "gateway.log") as log:
            base = f"http://127.0.0.1:{gateway_port}"
            wait_for("/readyz", lambda: httpx.get(f"{base}/readyz").status_code == 200, 60, log)
            run(image, env, *with_port(image.healthcheck, gateway_port))
            step("a chat completion and a stream through the fake upstream")
            client = openai.OpenAI(base_url=f"{base}/v1", api_key=key.strip(), max_retries=0)
            answer = client.chat.completions.create(
                model="image-check/model", messages=[{"role": "user", "content": "hello"}]
            )
            require(bool(answer.choices[0].message.content), f"an empty answer: {answer}")
            stream = client.chat.completions.create(
                model="image-check/model",
                stream=True,
                messages=[{"role": "user", "content": "hello"}],
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            require(bool(text), "the stream carried no text")
            step("the console's sign-in page and a static file")
            plain = httpx.get(f"{base}/console/sign-in/")
            redirected = plain.headers.get("location", "").startswith("https://")
            require(plain.status_code == 301 and redirected, "plain HTTP is not sent to HTTPS")
            page = httpx.get(f"{base}/console/sign-in/", headers={"X-Forwarded-Proto": "https"})
            require(page.status_code == 200 and "<form" in page.text, f"sign-in: {page}")
            css = httpx.get(
                f"{base}/static/console/console.css", headers={"X-Forwarded-Proto": "https"}
            )
            is_css = css.headers.get("content-type", "").startswith("text/css")
            require(css.status_code == 200 and is_css, f"console.css: {css}")
    step("the Celery worker runs what beat sends")
    schedule = "/tmp/" + f"switchyard-image-check-{os.getpid()}-beat"  # the image's /tmp
    worker = ["celery", "-A", "gateway", "worker", "--loglevel", "INFO", "--concurrency", "1"]
    beat = ["celery", "-A", "gateway", "beat", "--loglevel", "INFO", "--schedule", schedule]
    with (
        started(image, env, worker, scratch / "worker.log") as worker_log,
        started(image, env, beat, scratch / "beat.log") as beat_log,
    ):
        done = re.compile(r"Task routing\.tasks\.roll_up_live_metrics\[[^]]+\] succeeded")
        wait_for(
            "the worker to finish a rollup beat sent",
            lambda: bool(done.search(worker_log())),
            90,
            lambda: worker_log() + beat_log(),
        )
    with contextlib.suppress(FileNotFoundError):
        os.unlink(schedule)


def step(text: str) -> None:
    sys.stdout.write(f"image-check: {text}\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "IMAGE_CHECK_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument(
        "--redis", default=os.environ.get("IMAGE_CHECK_REDIS", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument(
        "--broker", default=os.environ.get("IMAGE_CHECK_BROKER", "redis://127.0.0.1:6379/14")
    )
    options = parser.parse_args()
    stages = parse((ROOT / "Dockerfile").read_text())
    problems = static_problems(stages, read_dockerignore(ROOT))
    if problems:
        raise SystemExit("image-check: " + "\n  ".join(["the Dockerfile:", *problems]))
    step("hadolint")
    subprocess.run(
        [str(Path(sys.executable).parent / "hadolint"), str(ROOT / "Dockerfile")], check=True
    )
    with tempfile.TemporaryDirectory(prefix="switchyard-image-") as folder:
        workspace = Path(folder)
        workspace.chmod(0o755)  # uid 10001 walks to the install; the stages stay root's
        step(f"replaying the Dockerfile into {workspace}")
        image = replay(stages, ROOT, workspace / "build")
        scratch = workspace / "run"
        scratch.mkdir(mode=0o777)
        scratch.chmod(0o777)  # the run's logs and the catalog, outside the image's root
        with fresh_database(options.postgres) as database_url:
            env = production_env(image, database_url, options.redis, options.broker)
            exercise(image, env, scratch)
    step("passed")


if __name__ == "__main__":
    main()
