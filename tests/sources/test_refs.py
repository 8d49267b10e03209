from __future__ import annotations

import pytest

from sources.catalog.refs import normalize_ref, parse_ref
from sources.errors import InvalidRef


@pytest.mark.parametrize(
    ("text", "default_kind", "expected"),
    [
        ("component:default/checkout", None, "component:default/checkout"),
        ("Component:Default/CheckOut", None, "component:default/checkout"),
        ("component:checkout", None, "component:default/checkout"),
        ("team-a", "Group", "group:default/team-a"),
        ("payments/team-a", "Group", "group:payments/team-a"),
        ("api:x.y_z-1", None, "api:default/x.y_z-1"),
    ],
)
def test_refs_normalise_case_kind_and_namespace(
    text: str, default_kind: str | None, expected: str
) -> None:
    assert normalize_ref(text, default_kind=default_kind) == expected


def test_a_ref_keeps_the_canonical_kind() -> None:
    assert parse_ref("api:default/orders") == ("API", "default", "orders")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("checkout", "needs a kind"),
        ("widget:default/x", "unknown kind"),
        ("component:default/-bad", "must consist of"),
        ("component:default/" + "a" * 64, "longer than 63"),
        ("component:default/", "must not be empty"),
        ("component:'; drop table entities; --", "must consist of"),
    ],
)
def test_bad_refs_say_why(text: str, message: str) -> None:
    with pytest.raises(InvalidRef, match=message):
        parse_ref(text)
