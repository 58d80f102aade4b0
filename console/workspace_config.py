"""What the console's policy and preset pages hand to `apply`: the workspace's section of
a config file, and the validator's problems with the file's path prefix cut off — so a
page names the field as its form does (`max_attempts: …`, not `workspaces[0].policy.…`).
Also the forms' comma-separated lists and numbers."""

from __future__ import annotations

from typing import Any

from declarative.fields import ConfigError
from management_api.config_apply import workspace_section
from workspaces.models import Workspace


def section(workspace: Workspace, name: str, value: Any) -> dict[str, Any]:
    """A config file holding only `name` (policy, presets) of `workspace`."""
    return workspace_section(workspace.slug, workspace.name, name, value)


def problems(error: ConfigError, prefix: str) -> list[str]:
    return [problem.removeprefix(prefix) for problem in error.errors]


def comma_list(text: str) -> list[str]:
    """`a, b,, c ` as ["a", "b", "c"]."""
    return [item.strip() for item in text.split(",") if item.strip()]


def form_number(text: str) -> int | float | str | None:
    """A form's number as JSON would carry it: an int, else a float; None when blank. Text
    that is neither stays text, for the validator to say what is wrong with it."""
    text = text.strip()
    if not text:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
