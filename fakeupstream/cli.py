"""The command-line options, shared by `python -m fakeupstream` and
`manage.py fakeupstream`, and their translation into a ServerConfig.

Every setting flag defaults to None, meaning "keep the profile's value".
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from fakeupstream.profiles import PROFILES, CacheMode, parse_error_rate, resolve_settings
from fakeupstream.server import ServerConfig, run

# Option dest -> FakeSettings field, for every flag that overrides a profile value.
SETTING_OPTIONS = (
    "name",
    "latency_ms",
    "ttft_ms",
    "tokens_per_s",
    "error_rate",
    "retry_after_s",
    "reply_tokens",
    "cached_tokens",
    "seed",
    "api_key",
    "models",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the fake upstream's options to an argparse (or Django CommandParser) parser."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, required=True, help="port to listen on")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="fast")
    parser.add_argument("--name", help="provider name in the reply text (the profile's name)")
    parser.add_argument(
        "--latency-ms", type=_non_negative(float), help="delay before non-stream replies"
    )
    parser.add_argument(
        "--ttft-ms", type=_non_negative(float), help="time to first token of streams"
    )
    parser.add_argument(
        "--tokens-per-s", type=_non_negative(float), help="stream pacing; 0 = unpaced"
    )
    parser.add_argument(
        "--error-rate",
        type=_error_rate,
        metavar="STATUS=P[,...]",
        help="random errors, e.g. 503=0.1,429=0.05 (seeded by --seed)",
    )
    parser.add_argument("--retry-after-s", type=_non_negative(int), help="Retry-After on 429s")
    parser.add_argument(
        "--reply-tokens", type=_non_negative(int), help="reply length without max_tokens"
    )
    parser.add_argument("--cached-tokens", choices=[mode.value for mode in CacheMode])
    parser.add_argument("--seed", type=int, help="seed of the error-rate draws (0)")
    parser.add_argument("--api-key", help="accept only this credential (default: any)")
    parser.add_argument(
        "--models", type=_comma_list, help="served model ids, comma-separated (any)"
    )


def config_from_options(options: Mapping[str, Any]) -> ServerConfig:
    """Parsed options (argparse namespace vars or Django's **options) -> ServerConfig."""
    overrides = {key: options.get(key) for key in SETTING_OPTIONS}
    if overrides["name"] is None:
        overrides["name"] = options["profile"]
    settings = resolve_settings(options["profile"], overrides)
    return ServerConfig(options["host"], options["port"], options["profile"], settings)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m fakeupstream",
        description="Fake OpenAI/Anthropic-compatible upstream with fault injection.",
    )
    add_arguments(parser)
    run(config_from_options(vars(parser.parse_args(argv))))


def _non_negative(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its error messages
    return parse


def _error_rate(text: str) -> dict[int, float]:
    try:
        return parse_error_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())
