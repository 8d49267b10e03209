"""Entity references: ``kind:namespace/name``, case-insensitive, stored lowercase."""

from __future__ import annotations

import re
from typing import Final

from sources.errors import InvalidRef

__all__ = [
    "DEFAULT_NAMESPACE",
    "KINDS",
    "canonical_kind",
    "check_name",
    "make_ref",
    "parse_ref",
]

DEFAULT_NAMESPACE: Final = "default"
KINDS: Final = ("Component", "API", "Resource", "System", "Domain", "Group", "User", "Location")
_KIND_BY_LOWER: Final = {kind.lower(): kind for kind in KINDS}
NAME_PATTERN: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
NAME_MAX: Final = 63


def canonical_kind(kind: str) -> str:
    """``component`` → ``Component``; raises for a kind the catalog does not know."""
    try:
        return _KIND_BY_LOWER[kind.strip().lower()]
    except KeyError:
        raise InvalidRef(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}") from None


def check_name(value: str, what: str = "name") -> str | None:
    """Why ``value`` is not a valid name or namespace, or None when it is."""
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


def parse_ref(
    text: str, *, default_kind: str | None = None, default_namespace: str = DEFAULT_NAMESPACE
) -> tuple[str, str, str]:
    """Split a ref into (canonical kind, namespace, name), all validated.

    ``kind`` may be left out where a default applies (an owner is a Group unless it says
    otherwise); ``namespace`` defaults to ``default``.
    """
    if not isinstance(text, str):
        raise InvalidRef(f"a reference must be a string, not {type(text).__name__}")
    raw = text.strip()
    kind_part, sep, rest = raw.partition(":")
    if not sep:
        kind_part, rest = "", raw
    namespace, sep, name = rest.partition("/")
    if not sep:
        namespace, name = default_namespace, rest
    if not kind_part:
        if default_kind is None:
            raise InvalidRef(f"reference {text!r} needs a kind, as in component:default/{name}")
        kind_part = default_kind
    kind = canonical_kind(kind_part)
    for value, what in ((namespace, "namespace"), (name, "name")):
        problem = check_name(value, what)
        if problem:
            raise InvalidRef(f"reference {text[:100]!r}: {problem}")
    return kind, namespace.lower(), name.lower()


def normalize_ref(
    text: str, *, default_kind: str | None = None, default_namespace: str = DEFAULT_NAMESPACE
) -> str:
    kind, namespace, name = parse_ref(
        text, default_kind=default_kind, default_namespace=default_namespace
    )
    return make_ref(kind, namespace, name)
