"""The ref helpers plugins import from graph.plugin read refs as the catalog does."""

from __future__ import annotations

import pytest

from graph.plugin import EntityRef, InvalidRef, entity_key, normalize_ref, parse_ref


def test_normalize_ref_gives_the_stored_form() -> None:
    assert normalize_ref("Component:Checkout") == "component:default/checkout"
    assert normalize_ref(" group:Platform/Team-A ") == "group:platform/team-a"
    assert normalize_ref("team-a", default_kind="group") == "group:default/team-a"
    assert normalize_ref("web", default_kind="component", default_namespace="shop") == (
        "component:shop/web"
    )
    assert normalize_ref("component:checkout") == entity_key("component:checkout")


def test_parse_ref_gives_named_parts() -> None:
    parsed = parse_ref("API:Payments/Orders")
    assert parsed == EntityRef(kind="API", namespace="payments", name="orders")
    assert (parsed.kind, parsed.namespace, parsed.name) == ("API", "payments", "orders")
    assert str(parsed) == "api:payments/orders"
    kind, namespace, name = parse_ref("user:ada")
    assert (kind, namespace, name) == ("User", "default", "ada")


@pytest.mark.parametrize(
    "text", ["", "checkout", "widget:default/x", "component:/x", "component:default/", ":x"]
)
def test_what_names_no_entity_raises_invalid_ref(text: str) -> None:
    with pytest.raises(InvalidRef):
        normalize_ref(text)
    with pytest.raises(InvalidRef):
        parse_ref(text)
