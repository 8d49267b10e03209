from __future__ import annotations

import pytest

from sources.catalog.refs import normalize_ref, parse_ref, split_ref
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
        # As Backstage's parseEntityRef: split, not held to the rules of entity names.
        ("artists@example.com", "Group", "group:default/artists@example.com"),
        ("group:default/Artists@Example.com", None, "group:default/artists@example.com"),
        ("component:default/" + "a" * 64, None, "component:default/" + "a" * 64),
        ("user:a/b/c", None, "user:a/b/c"),
        ("a/user:b", "Group", "group:a/user:b"),  # a colon after the namespace is the name's
    ],
)
def test_refs_normalise_case_kind_and_namespace(
    text: str, default_kind: str | None, expected: str
) -> None:
    assert normalize_ref(text, default_kind=default_kind) == expected


def test_a_ref_keeps_the_canonical_kind() -> None:
    assert parse_ref("api:default/orders") == ("API", "default", "orders")


def test_split_keeps_what_was_written() -> None:
    assert split_ref("Team:Ops/X", default_kind="Group") == ("Team", "Ops", "X")
    assert split_ref("x", default_kind="Group", default_namespace="payments") == (
        "Group",
        "payments",
        "x",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("checkout", "had missing or empty kind (it needs a kind, as in component:default/"),
        ("widget:default/x", "unknown kind"),
        ("component:default/", "was not on the form [<kind>:][<namespace>/]<name>"),
        (":x", "was not on the form"),
        ("component:/x", "was not on the form"),
        ("", "must not be empty"),
        ("component:a\x00b", "NUL"),
    ],
)
def test_bad_refs_say_why(text: str, message: str) -> None:
    with pytest.raises(InvalidRef) as caught:
        parse_ref(text)
    assert message in str(caught.value)
