"""Entity references: ``[kind:][namespace/]name``, case-insensitive, stored lowercase.

A ref is read as Backstage's ``parseEntityRef`` reads it: split into kind, namespace and name,
defaults filled in, and every part must be non-empty; nothing more is asked of the parts. So a
ref is not held to the rules of an entity's own name: ``owner: artists@example.com`` is the
group ``group:default/artists@example.com``, which no entity can be, and Backstage keeps the
component with a relation to it. Atrium keeps it too: such a ref is stored, a lookup by it
finds nothing, and a filter on it finds what points at it.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from sources.errors import InvalidRef
from sources.text import unstorable

__all__ = [
    "DEFAULT_NAMESPACE",
    "KINDS",
    "EntityRef",
    "canonical_kind",
    "check_name",
    "make_ref",
    "normalize_ref",
    "parse_ref",
    "split_ref",
]

DEFAULT_NAMESPACE: Final = "default"
KINDS: Final = ("Component", "API", "Resource", "System", "Domain", "Group", "User", "Location")
_KIND_BY_LOWER: Final = {kind.lower(): kind for kind in KINDS}
NAME_PATTERN: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
NAME_MAX: Final = 63


class EntityRef(NamedTuple):
    """A ref's parts: the kind as the catalog spells it (``Component``), namespace and name in
    lowercase; ``str(ref)`` is the normalized ref."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return make_ref(self.kind, self.namespace, self.name)


def canonical_kind(kind: str) -> str:
    """``component`` → ``Component``; raises for a kind the catalog does not know."""
    try:
        return _KIND_BY_LOWER[kind.strip().lower()]
    except KeyError:
        raise InvalidRef(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}") from None


def check_name(value: str, what: str = "name") -> str | None:
    """Why ``value`` is not a valid entity name, or None when it is."""
    if not value:
        return f"{what} must not be empty"
    if len(value) > NAME_MAX:
        return f"{what} {value[:70]!r} is longer than {NAME_MAX} characters"
    if not NAME_PATTERN.match(value):
        return (
            f"{what} {value!r} must consist of letters, digits and - _ . "
            "and start and end with a letter or digit"
        )
    return None


def make_ref(kind: str, namespace: str, name: str) -> str:
    return f"{kind}:{namespace}/{name}".lower()


def split_ref(
    text: str, *, default_kind: str | None = None, default_namespace: str = DEFAULT_NAMESPACE
) -> tuple[str, str, str]:
    """(kind, namespace, name) of ``text`` as written, defaults filled in; raises InvalidRef
    in Backstage's words when a part is empty or there is no kind and no default."""
    if not text:
        raise InvalidRef("Entity reference must not be empty")
    colon, slash = text.find(":"), text.find("/")
    if slash != -1 and slash < colon:
        colon = -1  # a colon after the namespace belongs to the name
    kind = text[:colon] if colon != -1 else None
    namespace = text[colon + 1 : slash] if slash != -1 else None
    name = text[max(colon + 1, slash + 1) :]
    if kind == "" or namespace == "" or name == "":
        raise InvalidRef(
            f'Entity reference "{text}" was not on the form [<kind>:][<namespace>/]<name>'
        )
    kind = kind or default_kind
    if not kind:
        raise InvalidRef(
            f'Entity reference "{text}" had missing or empty kind (it needs a kind, as in '
            f"component:{namespace or default_namespace}/{name})"
        )
    return kind, namespace or default_namespace, name


def parse_ref(
    text: str, *, default_kind: str | None = None, default_namespace: str = DEFAULT_NAMESPACE
) -> EntityRef:
    """A ref that names an entity to look up: (canonical kind, namespace, name), the last two
    lowercase. ``kind`` may be left out where a default applies (an owner is a Group unless
    it says otherwise); it must be a kind the catalog holds."""
    if not isinstance(text, str):
        raise InvalidRef(f"a reference must be a string, not {type(text).__name__}")
    why = unstorable(text)
    if why is not None:
        raise InvalidRef(f"a reference that {why} names nothing")
    kind, namespace, name = split_ref(
        text.strip(), default_kind=default_kind, default_namespace=default_namespace
    )
    return EntityRef(canonical_kind(kind), namespace.lower(), name.lower())


def normalize_ref(
    text: str, *, default_kind: str | None = None, default_namespace: str = DEFAULT_NAMESPACE
) -> str:
    """``text`` as the catalog stores refs: ``kind:namespace/name``, lowercase, the namespace
    ``default`` (or ``default_namespace``) when left out, the kind ``default_kind`` when left
    out (``normalize_ref("Checkout", default_kind="component")``); ``InvalidRef`` for text
    that names no entity: an empty part, no kind, or a kind the catalog does not hold."""
    kind, namespace, name = parse_ref(
        text, default_kind=default_kind, default_namespace=default_namespace
    )
    return make_ref(kind, namespace, name)
