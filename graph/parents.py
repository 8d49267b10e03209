"""Typed parents for fields a plugin adds to another's type (``builder.extend_type``).

A resolver of such a field names its parent with Strawberry's ``Parent`` annotation and a
protocol of the parent's schema fields, which mypy checks and Strawberry fills with the
object being resolved (a compiled plan passes it the same way)::

    @strawberry.type
    class ComponentOnCall:
        @strawberry.field
        async def on_call(self, parent: Parent[EntityParent], info: Info) -> str | None:
            return await rotation_of(info, parent.ref)

``EntityParent`` is any catalog entity (Component, API, Group, User...), ``ViewerParent`` the
``Viewer``; for another plugin's type, declare a ``Protocol`` of the fields read (the
observability plugin's ``PinAppParent``). The protocols hold schema fields only: what any
client could read of the parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from strawberry import Parent

__all__ = ["EntityParent", "Parent", "ViewerParent"]


class EntityParent(Protocol):
    """A catalog entity of any kind, as the schema shows it."""

    @property
    def ref(self) -> str:
        """``kind:namespace/name``, lowercase (``entity_key(ref)`` is the ref itself)."""

    @property
    def kind(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str | None: ...

    @property
    def description(self) -> str | None: ...

    @property
    def tags(self) -> Sequence[str]: ...

    @property
    def labels(self) -> Mapping[str, Any] | None: ...

    @property
    def annotations(self) -> Mapping[str, Any] | None: ...

    @property
    def spec(self) -> Mapping[str, Any] | None: ...


class ViewerParent(Protocol):
    """Whoever asks (the ``viewer`` query's type)."""

    @property
    def ref(self) -> str | None:
        """Their ``user:`` ref, or None when nobody signed in."""

    @property
    def scopes(self) -> Sequence[str]: ...

    @property
    def is_admin(self) -> bool: ...
