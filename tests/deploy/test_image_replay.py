"""`make image-check`'s parts that need no build (R-OPS-1): the Dockerfile's static rules,
.dockerignore's matching, and the replay of a small Dockerfile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deploy.check_image import static_problems, with_port
from deploy.image_replay import ignored, parse, read_dockerignore, replay, reroot

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
RULES = read_dockerignore(ROOT)


def test_the_dockerfile_keeps_every_static_rule():
    assert static_problems(parse(DOCKERFILE), RULES) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d[d.index("FROM python:3.11-slim-bookworm\n") :], "one stage"),
        (lambda d: d.replace("USER 10001:10001", "USER root"), "non-root USER"),
        (lambda d: d.replace("USER 10001:10001\n", ""), "non-root USER"),
        (lambda d: d.replace("WORKDIR /app\n", "WORKDIR /app\nCOPY gateway ./gateway\n"),
         "copies from the build context"),
        (lambda d: d.replace("HOME=/tmp", "HOME=/tmp SECRET_KEY=x"), "a secret baked"),
        (lambda d: d.replace('VOLUME ["/app/var"]\n', ""), "no VOLUME"),
        (lambda d: re.sub(r"HEALTHCHECK .*?\n(?=CMD)", "", d, flags=re.S), "no HEALTHCHECK"),
        (lambda d: d[: d.rindex("CMD [")] + "CMD switchyard serve\n", "exec (JSON) form"),
    ],
)  # fmt: skip
def test_each_static_rule_fails_on_a_dockerfile_that_breaks_it(change, problem):
    found = static_problems(parse(change(DOCKERFILE)), RULES)
    if problem is None:  # an exec-form CMD that is still exec form: no finding
        assert found == []
    else:
        assert any(problem in line for line in found), found


def test_a_shell_form_cmd_is_refused():
    shell_form = DOCKERFILE.replace(
        DOCKERFILE[DOCKERFILE.rindex("CMD [") :], "CMD switchyard serve\n"
    )
    assert any("exec (JSON) form" in p for p in static_problems(parse(shell_form), RULES))


def test_dockerignore_sends_the_packages_and_nothing_of_the_checkout_else():
    sent = [
        "pyproject.toml",
        "README.md",
        "gateway/asgi.py",
        "gateway/api/openapi.yaml",
        "console/static/console/console.css",
    ]
    kept_out = [".git/config", ".venv/bin/python", "var/dev-secrets.json", ".env", "bench/run.py",
                "tests/conftest.py", "gateway/__pycache__/asgi.cpython-311.pyc"]  # fmt: skip
    assert [path for path in sent if ignored(path, RULES)] == []
    assert [path for path in kept_out if not ignored(path, RULES)] == []


def test_without_a_dockerignore_the_checkout_would_be_sent(tmp_path):
    assert static_problems(parse(DOCKERFILE), read_dockerignore(tmp_path)) != []


def test_reroot_moves_the_image_paths_and_leaves_the_base_image_and_urls():
    root = Path("/r")
    assert reroot("/opt/v/bin:$PATH", root) == "/r/opt/v/bin:$PATH"
    assert reroot("mkdir -p /app/var && cd /src", root) == "mkdir -p /r/app/var && cd /r/src"
    assert reroot("/usr/bin/env /tmp/x /bin/sh", root) == "/usr/bin/env /tmp/x /bin/sh"
    assert reroot("http://127.0.0.1:8000/readyz", root) == "http://127.0.0.1:8000/readyz"


def test_the_image_command_runs_on_a_free_loopback_port():
    command = ["switchyard", "serve", "--host", "0.0.0.0", "--port", "8000"]
    assert with_port(command, 9) == ["switchyard", "serve", "--host", "127.0.0.1", "--port", "9"]


def test_replay_builds_each_stage_in_its_own_root(tmp_path):
    # given a build context and a two-stage Dockerfile
    context = tmp_path / "context"
    (context / "pkg").mkdir(parents=True)
    (context / "pkg" / "a.txt").write_text("a")
    (context / "secret.env").write_text("no")
    (context / ".dockerignore").write_text("*.env\n")
    dockerfile = (
        "FROM python:3.11-slim AS builder\nWORKDIR /src\nCOPY pkg ./pkg\n"
        "RUN cp pkg/a.txt /out.txt && test ! -e secret.env\n"
        "FROM python:3.11-slim\nENV APP=/opt/app PATH=/opt/app/bin:$PATH\n"
        "COPY --from=builder /out.txt /opt/app/out.txt\nWORKDIR /opt/app\n"
        'RUN python -c "import sys; assert sys.version_info[:2] == (3, 11)"\n'
        'USER 10001:10001\nCMD ["app"]\n'
    )
    # when
    image = replay(parse(dockerfile), context, tmp_path / "build")
    # then
    assert (image.root / "opt/app/out.txt").read_text() == "a"
    assert not (image.root / "src").exists()  # the builder's files stay in its own root
    assert image.workdir == image.root / "opt/app"
    assert image.env["APP"] == f"{image.root}/opt/app"
    assert image.env["PATH"].startswith(f"{image.root}/opt/app/bin:")
    assert (image.user, image.cmd) == ("10001:10001", ["app"])


def test_replay_refuses_an_instruction_it_cannot_carry_out():
    with pytest.raises(ValueError, match="ADD"):
        parse("FROM python:3.11-slim\nADD https://example.invalid/x /x\n")
