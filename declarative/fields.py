"""Reading untrusted configuration values, field by field, with the path of every problem.

`Fields` wraps one mapping of the parsed YAML file. Its getters check a type and a range,
record a problem as `path: message` in a shared `Issues` list and return a placeholder, so
one pass over the file reports every problem instead of stopping at the first. Unknown keys
are problems too. Pure: no Django, no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import urlsplit

from declarative.types import Secret

SLUG = re.compile(r"[-a-zA-Z0-9_]+")  # Django's SlugField
MODEL_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._:-]*")  # SPEC D-11
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")  # endpoint ids, virtual model slugs
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")  # upper case, so a pasted key stands out
TIMEOUT_KEYS = ("connect_ms", "ttft_ms", "idle_ms", "total_ms")
MICROS_PER_USD = Decimal(1_000_000)
DECIMAL_PLACES = 6  # the catalog's DecimalFields: max_digits=12, decimal_places=6
DECIMAL_LIMIT = Decimal(1_000_000)  # 12 digits with 6 decimal places stay below 10**6
POSITIVE_INT_MAX = 2**31 - 1  # fits every integer column the configuration fills
_MISSING: Any = object()


class ConfigError(Exception):
    """An invalid configuration; `errors` holds every problem as `path: message`."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = tuple(errors)


class Issues:
    """The problems found so far, in file order."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.messages.append(f"{path or '(top level)'}: {message}")

    def raise_if_any(self) -> None:
        if self.messages:
            raise ConfigError(self.messages)


def is_number(value: object) -> bool:
    """int or float, but not bool (YAML `true` is an int to Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def to_micros(usd: Decimal) -> int:
    """USD -> integer micro-dollars, rounding half up."""
    return int((usd * MICROS_PER_USD).quantize(Decimal(1), rounding=ROUND_HALF_UP))


class Fields:
    """One mapping of the file at `path`; typed getters for its keys.

    Every getter takes a `default`; without one the key is required. A missing or bad value
    is recorded in `issues` and a placeholder of the right type is returned.
    """

    def __init__(self, raw: object, path: str, issues: Issues, keys: Iterable[str]) -> None:
        self.path = path
        self.issues = issues
        allowed = tuple(keys)
        self.broken = not isinstance(raw, Mapping)  # reported once; no "is required" noise
        if not isinstance(raw, Mapping):
            issues.add(path, "must be a mapping")
            raw = {}
        self.raw: Mapping[Any, Any] = raw
        for key in raw:
            if not isinstance(key, str) or key not in allowed:
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                suffix = f" (did you mean {hint[0]!r}?)" if hint else ""
                issues.add(self.at(str(key)), f"unknown key{suffix}")

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.raw

    def error(self, key: str, message: str) -> None:
        if not self.broken:
            self.issues.add(self.at(key), message)

    def _value(self, key: str, default: Any) -> Any:
        if key in self.raw:
            return self.raw[key]
        if default is _MISSING:
            self.error(key, "is required")
        return _MISSING

    def text(
        self,
        key: str,
        *,
        default: Any = _MISSING,
        pattern: re.Pattern[str] | None = None,
        hint: str = "",
        max_length: int = 200,
    ) -> str:
        value = self._value(key, default)
        if value is _MISSING:
            return "" if default is _MISSING else default
        if not isinstance(value, str):
            quoted = f' (quote it: "{value}")' if is_number(value) else ""
            self.error(key, f"must be a string{quoted}")
        elif pattern is not None and not pattern.fullmatch(value):
            self.error(key, f"{value!r} is not {hint or 'valid'}")
        elif len(value) > max_length:
            self.error(key, f"must be at most {max_length} characters")
        elif not value.strip() and default is _MISSING:
            self.error(key, "must not be empty")
        else:
            return value
        return ""

    def choice(self, key: str, choices: Sequence[str], *, default: Any = _MISSING) -> str:
        value = self._value(key, default)
        if value is _MISSING:
            return "" if default is _MISSING else default
        if not isinstance(value, str) or value not in choices:
            self.error(key, f"must be one of {', '.join(choices)} (got {value!r})")
            return ""
        return value

    def flag(self, key: str, *, default: bool) -> bool:
        value = self._value(key, default)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.error(key, "must be true or false")
            return default
        return value

    def integer(
        self,
        key: str,
        *,
        default: Any = _MISSING,
        minimum: int = 1,
        maximum: int = POSITIVE_INT_MAX,
    ) -> int:
        value = self._value(key, default)
        if value is _MISSING:
            return 0 if default is _MISSING else default
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(key, "must be an integer")
        elif value < minimum:
            self.error(key, f"must be ≥ {minimum}")
        elif value > maximum:
            self.error(key, f"must be ≤ {maximum}")
        else:
            return value
        return 0

    def number(
        self,
        key: str,
        *,
        default: Any = _MISSING,
        minimum: float | None = 0.0,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
        nullable: bool = False,
    ) -> float | None:
        value = self._value(key, default)
        if value is _MISSING:
            return 0.0 if default is _MISSING else default
        if value is None and nullable:
            return None
        if not is_number(value) or value != value or value in (float("inf"), float("-inf")):
            self.error(key, "must be a number")
        elif minimum is not None and exclusive_minimum and value <= minimum:
            self.error(key, f"must be > {minimum:g}")
        elif minimum is not None and value < minimum:
            self.error(key, f"must be ≥ {minimum:g}")
        elif maximum is not None and value > maximum:
            self.error(key, f"must be ≤ {maximum:g}")
        else:
            number: float = value  # (an int stays an int)
            return number
        return 0.0

    def money(self, key: str, *, optional: bool = False) -> Decimal | None:
        """A USD amount ≥ 0 as a Decimal with at most 6 decimal places.

        Required unless `optional`, in which case an absent or null value gives None.
        """
        if optional and self.raw.get(key) is None:
            return None
        before = len(self.issues.messages)
        value = self.number(key)
        if len(self.issues.messages) > before or value is None:
            return Decimal(0)
        amount = Decimal(str(value))
        if amount.as_tuple().exponent < -DECIMAL_PLACES:  # type: ignore[operator]
            self.error(key, f"must have at most {DECIMAL_PLACES} decimal places")
        elif amount >= DECIMAL_LIMIT:
            self.error(key, f"must be < {DECIMAL_LIMIT}")
        return amount

    def texts(
        self,
        key: str,
        *,
        choices: Sequence[str] | None = None,
        pattern: re.Pattern[str] | None = None,
        hint: str = "",
    ) -> tuple[str, ...]:
        """A list of strings (optional, default empty), each checked against choices/pattern."""
        result: list[str] = []
        for path, item in self.items(key, default=()):
            if not isinstance(item, str) or not item:
                self.issues.add(path, "must be a non-empty string")
            elif choices is not None and item not in choices:
                self.issues.add(path, f"must be one of {', '.join(choices)} (got {item!r})")
            elif pattern is not None and not pattern.fullmatch(item):
                self.issues.add(path, f"{item!r} is not {hint or 'valid'}")
            else:
                result.append(item)
        return tuple(result)

    def items(self, key: str, *, default: Any = _MISSING) -> Iterator[tuple[str, Any]]:
        """`(path, value)` for each entry of a list (`key[0]`, `key[1]`, ...). An optional
        list may also be null (`providers:` with nothing under it)."""
        value = self._value(key, default)
        if value is _MISSING or (value is None and default is not _MISSING):
            return
        if not isinstance(value, list):
            self.error(key, "must be a list")
            return
        for index, item in enumerate(value):
            yield f"{self.at(key)}[{index}]", item

    def entries(self, key: str) -> Iterator[tuple[str, str, Any]]:
        """`(path, name, value)` for each entry of an optional free-form mapping."""
        if key not in self.raw:
            return
        value = self.raw[key]
        if not isinstance(value, Mapping):
            self.error(key, "must be a mapping")
            return
        for name, item in value.items():
            if not isinstance(name, str):
                self.issues.add(f"{self.at(key)}.{name}", "keys must be strings")
            else:
                yield f"{self.at(key)}.{name}", name, item

    def child(self, key: str, keys: Iterable[str]) -> Fields | None:
        """The nested mapping under `key`, or None when the key is absent."""
        if key not in self.raw:
            return None
        return Fields(self.raw[key], self.at(key), self.issues, keys)


def read_url(fields: Fields, key: str, *, required: bool = True) -> str:
    """An http(s) URL; optional ones default to ""."""
    value = fields.text(key, max_length=500) if required else fields.text(key, default="")
    parts = urlsplit(value)
    if value and (parts.scheme not in ("http", "https") or not parts.netloc):
        fields.error(key, f"{value!r} is not an http(s) URL")
    return value


def is_json(value: object) -> bool:
    """Whether a YAML value stores as JSON unchanged (YAML dates and sets do not)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json(v) for k, v in value.items())
    return False


def check_unique(issues: Issues, keys: Sequence[tuple[str, str]]) -> None:
    """Report each `(path, key)` whose key appeared earlier in the section."""
    first: dict[str, str] = {}
    for path, key in keys:
        if key and key in first:
            issues.add(path, f"duplicate of {first[key]}")
        first.setdefault(key, path)


@dataclass(frozen=True, slots=True)
class Known:
    """Names a reference may use: those the file declares plus those the database holds."""

    providers: frozenset[str]
    models: frozenset[str]
    virtual_models: frozenset[str]

    def check(self, fields: Fields, key: str, value: str, kind: str) -> None:
        """Record an unknown reference; `kind` is provider, model or target."""
        names = {
            "provider": self.providers,
            "model": self.models,
            "target": self.models | self.virtual_models,
        }[kind]
        if not value or value in names:
            return
        what = "model or virtual model" if kind == "target" else kind
        if kind == "model" and value in self.virtual_models:
            fields.error(key, f"{value!r} is a virtual model; name a concrete model")
        else:
            fields.error(key, f"unknown {what} {value!r} (not in this file or the database)")


def read_secret(fields: Fields, environ: Mapping[str, str], *, required: bool) -> Secret | None:
    """`api_key` or `api_key_env` (a variable read from `environ` now). Messages never
    include the key itself. Surrounding whitespace (a newline from a secrets file) is dropped.
    """
    if fields.has("api_key") and fields.has("api_key_env"):
        fields.error("api_key", "give api_key or api_key_env, not both")
        return None
    if fields.has("api_key"):
        value = fields.raw["api_key"]
        if not isinstance(value, str) or not value.strip():
            fields.error("api_key", "must be a non-empty string")
            return None
        return Secret(value.strip(), env=None)
    if fields.has("api_key_env"):
        name = fields.raw["api_key_env"]
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            # Never echo the value: it may be the key itself, pasted into the wrong field.
            fields.error("api_key_env", "must be an UPPER_SNAKE_CASE environment variable name")
            return None
        value = environ.get(name)
        if value is None or not value.strip():
            state = "is not set" if value is None else "is empty"
            fields.error("api_key_env", f"environment variable {name} {state}")
            return None
        return Secret(value.strip(), env=name)
    if required and not fields.broken:
        fields.issues.add(fields.path, "needs api_key or api_key_env")
    return None


def read_timeouts(parent: Fields, key: str = "timeouts") -> dict[str, int]:
    """`{connect_ms, ttft_ms, idle_ms, total_ms}`, each optional, positive milliseconds."""
    fields = parent.child(key, TIMEOUT_KEYS)
    if fields is None:
        return {}
    return {name: fields.integer(name) for name in TIMEOUT_KEYS if fields.has(name)}
