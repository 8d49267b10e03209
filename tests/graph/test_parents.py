"""The typed parents plugins annotate with hold only fields the schema's types have."""

from __future__ import annotations

from typing import Any

import pytest

from graph.catalog.types import API, Component, Group, Location, User
from graph.ownership.types import ViewerType
from graph.parents import EntityParent, ViewerParent


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def _fields(cls: Any) -> set[str]:
    return {f.python_name for f in cls.__strawberry_definition__.fields}


@pytest.mark.parametrize("cls", [Component, API, Group, User, Location])
def test_entity_parent_reads_schema_fields_of_every_kind(cls: type) -> None:
    members = _members(EntityParent)
    assert {"ref", "name", "annotations", "spec"} <= members
    assert members <= _fields(cls), members - _fields(cls)


def test_viewer_parent_reads_schema_fields_of_the_viewer() -> None:
    members = _members(ViewerParent)
    assert members == {"ref", "scopes", "is_admin"}
    assert members <= _fields(ViewerType)
