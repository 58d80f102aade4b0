"""A Dockerfile replayed without a container engine (`make image-check`, docs/deployment.md).

Each stage gets a directory of its own standing for its file system. The instructions that
build files are carried out there: COPY (from the build context filtered by .dockerignore,
or with --from= from an earlier stage), RUN (through `sh -c`, as root), ENV and WORKDIR.
The rest (USER, VOLUME, EXPOSE, HEALTHCHECK, CMD) is recorded for the caller to run.

Paths the image itself lays out (/src, /wheels, /opt/..., /app) are moved under the stage's
directory wherever an instruction names them; the base image's own (/usr, /bin, /tmp, ...)
are the host's, with Debian's Python 3.11 standing in for the base image's `python`."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from dockerfile_parse import DockerfileParser

# The base image's directories: left alone when an instruction names them.
BASE_DIRS = ("tmp", "usr", "bin", "sbin", "etc", "lib", "lib64", "dev", "proc", "sys", "root")
_IMAGE_PATH = re.compile(rf"(?<![\w./$-])/(?!/|(?:{'|'.join(BASE_DIRS)})(?:/|\b))")
# Debian's python3.11 (with python3-venv) stands in for python:3.11-slim's.
STAND_IN_PYTHONS = (Path("/usr/bin/python3.11"), Path("/usr/local/bin/python3.11"))
BUILD_INSTRUCTIONS = {"COPY", "RUN", "ENV", "WORKDIR"}
RECORDED = {"USER", "VOLUME", "EXPOSE", "HEALTHCHECK", "CMD", "ENTRYPOINT", "LABEL"}


@dataclass(frozen=True)
class Instruction:
    name: str  # upper case
    value: str  # the arguments, continuation lines joined


@dataclass
class Stage:
    base: str
    alias: str | None
    instructions: list[Instruction] = field(default_factory=list)


@dataclass
class Image:
    """The last stage, replayed: where its file system lies and what it would run."""

    root: Path
    env: dict[str, str]
    workdir: Path
    user: str | None = None
    volumes: list[str] = field(default_factory=list)
    healthcheck: list[str] | None = None
    cmd: list[str] | None = None

    def inside(self, path: str) -> Path:
        """An absolute path of the image, as a path on this machine."""
        return Path(reroot(path, self.root))


def parse(dockerfile: str) -> list[Stage]:
    parser = DockerfileParser(fileobj=io.BytesIO(dockerfile.encode()))
    stages: list[Stage] = []
    for item in parser.structure:
        name, value = item["instruction"].upper(), item["value"]
        if name == "FROM":
            words = value.split()
            alias = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], alias=alias))
        elif name in BUILD_INSTRUCTIONS | RECORDED:
            if not stages:
                raise ValueError(f"{name} before any FROM")
            stages[-1].instructions.append(Instruction(name, value))
        elif name not in {"COMMENT", "ARG"}:
            raise ValueError(f"image-check cannot replay {name} (line {item['startline'] + 1})")
    return stages


def reroot(text: str, root: Path) -> str:
    """`text` with each absolute path the image lays out moved under `root`."""
    return _IMAGE_PATH.sub(lambda _: f"{root}/", text)


def base_env(shims: Path) -> dict[str, str]:
    """The base image's environment: its PATH, with `python` a Python 3.11 of this machine
    that any user can run (the run is as the image's uid; a Python under /root is not)."""
    interpreter = next((p for p in STAND_IN_PYTHONS if os.access(p, os.X_OK)), None)
    if interpreter is None:
        raise FileNotFoundError(f"no Python 3.11 for the base image: {STAND_IN_PYTHONS}")
    shims.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        link = shims / name
        if not link.exists():
            link.symlink_to(interpreter)
    return {"PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def replay(stages: list[Stage], context: Path, workspace: Path) -> Image:
    """Build every stage under `workspace`; answer the last one."""
    ignore = read_dockerignore(context)
    env0 = base_env(workspace / "base-shims")
    roots: dict[str, Path] = {}
    image: Image | None = None
    for number, stage in enumerate(stages):
        root = workspace / f"stage-{number}"
        root.mkdir(parents=True)
        image = Image(root=root, env=dict(env0), workdir=root)
        for instruction in stage.instructions:
            _apply(instruction, image, context, ignore, roots)
        roots[str(number)] = root
        if stage.alias:
            roots[stage.alias] = root
    if image is None:
        raise ValueError("the Dockerfile has no FROM")
    return image


def _apply(
    instruction: Instruction,
    image: Image,
    context: Path,
    ignore: list[tuple[bool, re.Pattern[str]]],
    roots: dict[str, Path],
) -> None:
    name, value = instruction.name, instruction.value
    if name == "ENV":
        for word in shlex.split(value):
            key, sep, raw = word.partition("=")
            if not sep:
                raise ValueError(f"ENV {value!r}: only the KEY=value form is replayed")
            image.env[key] = reroot(Template(raw).safe_substitute(image.env), image.root)
    elif name == "WORKDIR":
        image.workdir = _resolve(value, image)
        image.workdir.mkdir(parents=True, exist_ok=True)
    elif name == "RUN":
        argv = json.loads(value) if value.startswith("[") else ["sh", "-c", value]
        argv = [reroot(arg, image.root) for arg in argv]
        done = subprocess.run(
            argv, cwd=image.workdir, env=image.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"RUN {value} failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    elif name == "COPY":
        _copy(shlex.split(value), image, context, ignore, roots)
    elif name == "USER":
        image.user = value.strip()
    elif name == "VOLUME":
        image.volumes += json.loads(value) if value.startswith("[") else value.split()
    elif name == "HEALTHCHECK":
        _, _, command = value.partition("CMD")
        image.healthcheck = json.loads(command.strip())
    elif name == "CMD":
        image.cmd = json.loads(value) if value.startswith("[") else ["sh", "-c", value]


def _resolve(path: str, image: Image) -> Path:
    return Path(reroot(path, image.root)) if path.startswith("/") else image.workdir / path


def _copy(
    words: list[str],
    image: Image,
    context: Path,
    ignore: list[tuple[bool, re.Pattern[str]]],
    roots: dict[str, Path],
) -> None:
    flags = dict(word[2:].split("=", 1) for word in words if word.startswith("--"))
    *sources, destination = [word for word in words if not word.startswith("--")]
    target = _resolve(destination, image)
    for source in sources:
        if "from" in flags:
            origin = Path(reroot(source, roots[flags["from"]]))
            files = [p for p in origin.rglob("*") if p.is_file()] if origin.is_dir() else [origin]
        else:
            origin = context / source
            files = [
                p for p in _context_files(context, ignore) if p == origin or origin in p.parents
            ]
        if not files:
            raise FileNotFoundError(f"COPY {source}: nothing in the build context")
        for file in files:
            relative = file.relative_to(origin) if origin.is_dir() else Path(file.name)
            into = target / relative if (origin.is_dir() or destination.endswith("/")) else target
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, into)


def read_dockerignore(context: Path) -> list[tuple[bool, re.Pattern[str]]]:
    """.dockerignore's patterns in order, each (re-include?, regex); the last match decides."""
    path = context / ".dockerignore"
    rules = []
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        rules.append((include, _glob(line.lstrip("!").strip("/"))))
    return rules


def ignored(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: a pattern matches a path or any of its parent folders."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for include, pattern in rules:
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            verdict = not include
    return verdict


def _pruned(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    reaches_in = any(
        include and (pattern.pattern.startswith(re.escape(relative)) or "*" in pattern.pattern)
        for include, pattern in rules
    )
    return ignored(relative, rules) and not reaches_in


def _glob(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def _context_files(context: Path, rules: list[tuple[bool, re.Pattern[str]]]) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(context):
        base = Path(folder)
        # A folder excluded that no `!` pattern reaches into is never walked (.venv, .git).
        dirs[:] = [d for d in dirs if not _pruned(str((base / d).relative_to(context)), rules)]
        for name in files:
            if not ignored(str((base / name).relative_to(context)), rules):
                found.append(base / name)
    return found
