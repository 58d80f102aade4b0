"""The image's `pip install .` builds from what the Dockerfile copies: every package the wheel
is declared to hold ([tool.setuptools.packages.find]) must be copied, or the install silently
leaves out an installed app (R-OPS-1)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def copied_sources(dockerfile: str) -> set[str]:
    """The source paths of every COPY (continuation lines joined; flags such as --from= or
    --chown= skipped; the last argument is the destination)."""
    sources: set[str] = set()
    for line in dockerfile.replace("\\\n", " ").splitlines():
        words = line.split()
        if not words or words[0].upper() != "COPY":
            continue
        paths = [word for word in words[1:] if not word.startswith("--")]
        sources.update(path.rstrip("/") for path in paths[:-1])
    return sources


def declared_packages() -> set[str]:
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {pattern.rstrip("*") for pattern in found["packages"]["find"]["include"]}


def test_r_ops_1_the_dockerfile_copies_every_package_the_wheel_declares() -> None:
    # given
    copied = copied_sources((ROOT / "Dockerfile").read_text())
    # when
    missing = declared_packages() - copied
    # then
    assert missing == set(), f"the Dockerfile does not copy {sorted(missing)}"


def test_r_ops_1_every_first_party_installed_app_is_in_the_wheel() -> None:
    # given
    first_party = {app for app in settings.INSTALLED_APPS if (ROOT / app).is_dir()}
    # then
    assert first_party <= declared_packages()


def test_copied_sources_reads_flags_and_continuations() -> None:
    dockerfile = "COPY --chown=1000:1000 a b/ \\\n  c /dst/\ncopy d ./d\nRUN echo COPY x y\n"
    assert copied_sources(dockerfile) == {"a", "b", "c", "d"}
