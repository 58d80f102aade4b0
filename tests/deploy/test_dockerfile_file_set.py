"""The image's `pip install .` builds from what the Dockerfile copies: every package the wheel
is declared to hold ([tool.setuptools.packages.find]) must be copied, or the install silently
leaves out an installed app (R-OPS-1). And the wheel holds a package's files other than its
modules only where [tool.setuptools.package-data] names them: one it misses (a template, a
static file, the /v1 OpenAPI document) is absent from the image, which fails when it reads it."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


def _setuptools() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def declared_packages() -> set[str]:
    return {pattern.rstrip("*") for pattern in _setuptools()["packages"]["find"]["include"]}


def packaged_data(package_data: Mapping[str, list[str]]) -> set[Path]:
    """The files these package-data globs name, read as setuptools reads them: each glob
    relative to its package's folder."""
    return {
        path
        for package, patterns in package_data.items()
        for pattern in patterns
        for path in (ROOT / package.replace(".", "/")).glob(pattern)
        if path.is_file()
    }


def data_files() -> set[Path]:
    """Every file under the declared packages but Python's (modules, bytecode) and hidden ones."""
    return {
        path
        for package in declared_packages()
        for path in (ROOT / package).rglob("*")
        if path.is_file()
        and path.suffix not in {".py", ".pyc"}
        and not any(part == "__pycache__" or part.startswith(".") for part in path.parts)
    }


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


def test_r_ops_1_the_wheel_holds_every_data_file_of_its_packages() -> None:
    # given
    package_data = _setuptools()["package-data"]
    # when
    missing = data_files() - packaged_data(package_data)
    # then
    assert missing == set(), f"package-data leaves out {sorted(map(str, missing))}"
    assert ROOT / "gateway/api/openapi.yaml" in packaged_data(package_data)


def test_packaged_data_reads_each_glob_in_its_packages_folder() -> None:
    # given
    package_data = {"gateway": ["api/*.yaml"], "console": ["static/console/*"]}
    # when
    found = packaged_data(package_data)
    # then
    assert ROOT / "gateway/api/openapi.yaml" in found
    assert ROOT / "gateway/demo/switchyard-demo.yaml" not in found
    assert ROOT / "console/static/console/vendor" not in found  # a folder is no file


def test_copied_sources_reads_flags_and_continuations() -> None:
    dockerfile = "COPY --chown=1000:1000 a b/ \\\n  c /dst/\ncopy d ./d\nRUN echo COPY x y\n"
    assert copied_sources(dockerfile) == {"a", "b", "c", "d"}
