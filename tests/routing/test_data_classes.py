"""A request's data class (SPEC R-POL-1, D-22): named by metadata or header, defaulted by
the policy, refused when the policy does not allow it. Pure: no database."""

from __future__ import annotations

import pytest

from routing.engine.data_classes import DataClassNotAllowed, request_data_class
from routing.engine.resolve import ResolveError

HEADER = "X-Switchyard-Data-Class"


@pytest.mark.parametrize(
    ("_case", "named", "headers", "allowed", "expected"),
    [
        ("metadata names it", "public", {}, ("internal", "public"), "public"),
        ("the header names it", None, {HEADER: "public"}, ("internal", "public"), "public"),
        ("both agree", "pii", {HEADER: " pii "}, (), "pii"),
        ("the policy's first class", None, {}, ("confidential", "internal"), "confidential"),
        ("no policy list: internal", None, {}, (), "internal"),
        ("no policy list: any class", "secret", {}, (), "secret"),
    ],
)
def test_d_22_the_request_class(_case, named, headers, allowed, expected) -> None:
    assert request_data_class(named, headers, allowed) == expected


def test_d_22_a_class_outside_the_policy_is_refused() -> None:
    with pytest.raises(DataClassNotAllowed) as refused:
        request_data_class("pii", {}, ("public", "internal"))
    assert refused.value.data_class == "pii"
    assert str(refused.value) == (
        "Data class `pii` is not allowed in this workspace (allowed: public, internal)."
    )


@pytest.mark.parametrize(
    ("named", "headers", "param"),
    [
        ("pii", {HEADER: "public"}, HEADER),
        (" ", {}, "metadata.data_class"),
        (None, {HEADER: "x" * 65}, HEADER),
    ],
)
def test_d_22_an_ambiguous_or_malformed_class_is_a_400(named, headers, param) -> None:
    with pytest.raises(ResolveError) as bad:
        request_data_class(named, headers, ())
    assert bad.value.param == param
