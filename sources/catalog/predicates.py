"""Backstage's catalog filters, read as its backend reads them and turned into one condition.

A filter is ``kind=component,spec.type=service``: statements joined by commas, each
``key=value`` (the key has that value) or a bare ``key`` (the key exists, with any value).
Statements of one filter must all hold; a key named twice in it holds for any of its values;
several filters (``filter`` repeated) hold for any of them. Keys and values are compared
without regard to case. That is ``parseEntityFilterString`` and the search table's rules in
Backstage's catalog backend; what each key means in Atrium's tables is ``search_keys``.

Whatever a client writes ends in a condition or a ``FilterError`` (Backstage's InputError):
keys Atrium keeps nothing under, text PostgreSQL cannot store, values longer than Backstage's
search table keeps (200 characters), and more than ``MAX_STATEMENTS`` statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sources.catalog.queries import FacetField, Where
from sources.catalog.refs import KINDS
from sources.catalog.search_keys import TRUE, FilterError, Params, field_of, like_pattern
from sources.text import unstorable

__all__ = [
    "MAX_LENGTH",
    "MAX_STATEMENTS",
    "Condition",
    "FilterSet",
    "facet_values",
    "parse_filters",
    "to_where",
]

MAX_STATEMENTS: Final = 100
# Backstage's search table keeps keys and values of at most 200 characters: a longer one can
# never match there, and is refused here as the mistake it is.
MAX_LENGTH: Final = 200


@dataclass(frozen=True, slots=True)
class Condition:
    key: str  # as written, for messages
    values: tuple[str, ...] | None  # lowercase, any of them; None: the key exists


FilterSet = tuple[Condition, ...]


def parse_filters(filters: Sequence[str]) -> list[FilterSet]:
    """Filters as ``filter`` parameters give them; empty ones (``filter=``) are no filter."""
    sets: list[FilterSet] = []
    statements = 0
    for text in filters:
        by_key: dict[str, list[str] | None] = {}
        for statement in (s.strip() for s in text.split(",")):
            if not statement:
                continue
            statements += 1
            if statements > MAX_STATEMENTS:
                raise FilterError(f"filters may hold at most {MAX_STATEMENTS} statements")
            key, equals, value = statement.partition("=")
            key = key.strip()
            if not key:
                raise FilterError(
                    f"Invalid filter, {_quoted(statement)} is not a valid statement (expected "
                    "a string on the form a=b or a= or a)"
                )
            _check(key, "key")
            if key in by_key and by_key[key] is None:
                continue
            if not equals:
                by_key[key] = None
            else:
                value = value.strip()
                _check(value, "value")
                found = by_key.setdefault(key, [])
                assert found is not None
                found.append(value.lower())
        if by_key:
            sets.append(
                tuple(
                    Condition(k, None if v is None else tuple(dict.fromkeys(v)))
                    for k, v in by_key.items()
                )
            )
    return sets


def _check(text: str, what: str) -> None:
    problem = unstorable(text)
    if problem is not None:
        raise FilterError(f"a filter {what} {problem}")
    if len(text) > MAX_LENGTH:
        raise FilterError(
            f"a filter {what} is at most {MAX_LENGTH} characters; {_quoted(text)} has {len(text)}"
        )


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def to_where(
    sets: Sequence[FilterSet],
    *,
    tsquery: str | None = None,
    contains: tuple[Sequence[str], str] | None = None,
) -> Where:
    """One condition for filters, an Atrium search (``tsquery``) and Backstage's text filter
    (``contains``: the fields, and the text one of them must contain)."""
    p = Params()
    parts = []
    if sets:
        alternatives = [" and ".join(_condition(c, p) for c in s) for s in sets]
        parts.append("(" + " or ".join(f"({a})" for a in alternatives) + ")")
    if tsquery is not None:
        parts.append(f"e.search @@ to_tsquery('english', {p(tsquery)})")
    if contains is not None:
        fields, text = contains
        pattern = like_pattern(text.lower())
        parts.append("(" + " or ".join(field_of(f).contains(pattern, p) for f in fields) + ")")
    kinds = _kinds(sets)
    return Where(
        " and ".join(parts) or TRUE,
        tuple(p.values),
        kinds=kinds,
        kinds_only=tsquery is None and contains is None and _kinds_only(sets),
    )


def _condition(condition: Condition, p: Params) -> str:
    found = field_of(condition.key)
    return found.exists(p) if condition.values is None else found.match(condition.values, p)


def _kinds(sets: Sequence[FilterSet]) -> list[str] | None:
    """The kinds every match has, when every filter names some; else None (any kind)."""
    by_lower = {k.lower(): k for k in KINDS}
    kinds: set[str] = set()
    for filter_set in sets:
        named = [c for c in filter_set if c.key.lower() == "kind" and c.values is not None]
        if not named:
            return None
        # Several kind statements in one filter all hold: what they share.
        shared = set.intersection(
            *({by_lower[v] for v in c.values or () if v in by_lower} for c in named)
        )
        kinds |= shared
    return sorted(kinds) if sets else None


def _kinds_only(sets: Sequence[FilterSet]) -> bool:
    return all(len(s) == 1 and s[0].key.lower() == "kind" and s[0].values is not None for s in sets)


def facet_values(key: str, where: Where) -> tuple[str, tuple[object, ...]] | FacetField:
    """How to count the values of ``key`` among what ``where`` matches: the counts table's
    field when it keeps them for such a condition, else a query of the values as written
    (one row each, over the entity ``e``) and its parameters, numbered after ``where``'s."""
    found = field_of(key)
    if found.facet is None:
        raise FilterError(f"{key!r} cannot be counted")
    if found.counted is not None and where.kinds_only:
        return FacetField(found.counted)
    p = Params(len(where.params) + 1)
    return found.facet(p), tuple(p.values)
