"""What a key of Backstage's entity data (``kind``, ``spec.type``, ``metadata.annotations.x``,
``relations.ownedby``) is in Atrium's tables: one SQL expression per way of asking about it.

Backstage's catalog answers filters from a search table of lowercased (key, value) pairs taken
from the whole entity. Atrium keeps the entity in columns instead, so each key is mapped to
what holds it: a column (kind, name, type: their indexes serve), labels and annotations
lowercased whole (their folded indexes serve, migration 0011), the relations table, or for the
rest of ``spec`` and ``metadata.links`` the same pairs computed entity by entity
(``catalog_search_pairs``). A key Atrium keeps nothing under is refused, naming it.

Every value reaches SQL as a parameter; the fragments here are fixed text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sources.catalog.model import INVERSE
from sources.catalog.refs import KINDS
from sources.catalog.uids import entity_id_of
from sources.errors import CatalogError

__all__ = [
    "API_VERSION",
    "FALSE",
    "TRUE",
    "Field",
    "FilterError",
    "Params",
    "field_of",
    "like_pattern",
]

TRUE: Final = "true"
FALSE: Final = "false"
# Relation types by their lowercase spelling: Backstage's search keys are lowercase.
_RELATIONS: Final = {name.lower(): name for name in INVERSE}
# The API version entities are served with (Atrium keeps no other).
API_VERSION: Final = "backstage.io/v1alpha1"


class FilterError(CatalogError):
    """A filter, field or order a client wrote that Atrium cannot take (Backstage's
    InputError)."""


class Params:
    """Parameters of one statement, numbered from ``start``."""

    def __init__(self, start: int = 1) -> None:
        self.start = start
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return f"${self.start + len(self.values) - 1}"


def like_pattern(text: str) -> str:
    """``%text%`` for LIKE, its own ``%``, ``_`` and ``\\`` taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass(frozen=True, slots=True)
class Field:
    """SQL over the entity ``e`` for one key. ``match`` takes lowercase values (any of them),
    ``contains`` a LIKE pattern, ``facet`` selects the values as written (a row each)."""

    match: Callable[[Sequence[str], Params], str]
    exists: Callable[[Params], str]
    contains: Callable[[str, Params], str]
    facet: Callable[[Params], str] | None
    # The field the counts table keeps this key's values under (facet_rows(), migration 0001).
    counted: str | None = None


def _equals(expression: str, values: Sequence[str], p: Params) -> str:
    # One value as an equality: the planner then reads a range of an index led by it.
    if len(values) == 1:
        return f"{expression} = {p(values[0])}"
    return f"{expression} = any({p(list(values))}::text[])"


def _column(column: str, *, folded: bool, nullable: bool, counted: str | None = None) -> Field:
    """A text column; ``folded`` when it is compared in lowercase (it is not stored so)."""
    expression = f"lower(e.{column})" if folded else f"e.{column}"
    return Field(
        match=lambda values, p: _equals(expression, values, p),
        exists=lambda p: f"e.{column} is not null" if nullable else TRUE,
        contains=lambda pattern, p: f"{expression} like {p(pattern)}",
        facet=lambda p: f"select e.{column}",
        counted=counted,
    )


def _nothing(facet: bool = True) -> Field:
    """A key Backstage's search table never holds (an object, ``metadata.etag``)."""
    return Field(
        match=lambda values, p: FALSE,
        exists=lambda p: FALSE,
        contains=lambda pattern, p: FALSE,
        facet=(lambda p: "select null::text where false") if facet else None,
    )


def _kind() -> Field:
    by_lower = {k.lower(): k for k in KINDS}

    def match(values: Sequence[str], p: Params) -> str:
        kinds = [by_lower[v] for v in values if v in by_lower]
        return _equals("e.kind", kinds, p) if kinds else FALSE

    return Field(
        match=match,
        exists=lambda p: TRUE,
        contains=lambda pattern, p: f"lower(e.kind) like {p(pattern)}",
        facet=lambda p: "select e.kind",
        counted="kind",
    )


def _api_version() -> Field:
    return Field(
        match=lambda values, p: TRUE if API_VERSION in values else FALSE,
        exists=lambda p: TRUE,
        contains=lambda pattern, p: f"{p(API_VERSION)}::text like {p(pattern)}",
        facet=lambda p: f"select {p(API_VERSION)}::text",
    )


def _uid() -> Field:
    def match(values: Sequence[str], p: Params) -> str:
        ids = [i for v in values if (i := entity_id_of(v)) is not None]
        return f"e.id = any({p(ids)}::bigint[])" if ids else FALSE

    return Field(
        match=match, exists=lambda p: TRUE, contains=_no_contains("metadata.uid"), facet=None
    )


def _no_contains(key: str) -> Callable[[str, Params], str]:
    def refuse(pattern: str, p: Params) -> str:
        raise FilterError(f"{key} cannot be searched for text")

    return refuse


def _tags() -> Field:
    return Field(
        match=lambda values, p: f"e.tags && {p(list(values))}::text[]",
        exists=lambda p: "e.tags <> '{}'",
        contains=lambda pattern, p: (
            f"exists (select 1 from unnest(e.tags) t where t like {p(pattern)})"
        ),
        facet=lambda p: "select unnest(e.tags)",
        counted="tag",
    )


def _tag(tag: str) -> Field:
    """``metadata.tags.java``: Backstage's key for a string in a list, with the value true."""

    def has(p: Params) -> str:
        return f"e.tags @> {p([tag])}::text[]"

    return Field(
        match=lambda values, p: has(p) if "true" in values else FALSE,
        exists=has,
        contains=lambda pattern, p: f"({has(p)} and 'true' like {p(pattern)})",
        facet=lambda p: f"select 'true' where {has(p)}",
    )


def _mapping(column: str, key: str) -> Field:
    """A label or annotation: ``key`` lowercase, compared with the column lowercased whole."""
    folded = f"(lower(e.{column}::text)::jsonb)"

    def match(values: Sequence[str], p: Params) -> str:
        # One containment per value: each is answered from the folded GIN index.
        return "(" + " or ".join(f"{folded} @> {p({key: v})}" for v in values) + ")"

    return Field(
        match=match,
        exists=lambda p: f"{folded} ? {p(key)}",
        contains=lambda pattern, p: f"{folded} ->> {p(key)} like {p(pattern)}",
        facet=lambda p: (
            f"select m.value from jsonb_each_text(e.{column}) m where lower(m.key) = {p(key)}"
        ),
    )


def _relation(relation: str) -> Field:
    if relation == "ownedBy":
        # The owner column holds exactly the target of the ownedBy relation, and is indexed.
        return Field(
            match=lambda values, p: _equals("e.owner_ref", values, p),
            exists=lambda p: "e.owner_ref is not null",
            contains=lambda pattern, p: f"e.owner_ref like {p(pattern)}",
            facet=lambda p: "select e.owner_ref",
            counted="owner",
        )
    targets = "select r.target_ref from relations r where r.source_ref = e.ref and r.type = {}"
    return Field(
        match=lambda values, p: (
            f"e.ref in (select r.source_ref from relations r where r.type = {p(relation)} "
            f"and r.target_ref = any({p(list(values))}::text[]))"
        ),
        exists=lambda p: f"exists ({targets.format(p(relation))})",
        contains=lambda pattern, p: (
            f"exists ({targets.format(p(relation))} and r.target_ref like {p(pattern)})"
        ),
        facet=lambda p: targets.format(p(relation)),
    )


def _pairs(column: str, prefix: str, key: str) -> Field:
    """Keys under ``spec`` or ``metadata.links``: the pairs computed for each entity, after a
    cheap test on the document's text that every match passes, so most entities never have
    their pairs computed: the key's last segment appears before a closing quote (it ends a
    key, or a string in a list whose path and string make the key), and a value appears (but
    ``true``, the value of those list keys)."""
    pairs = f"catalog_search_pairs(e.{column}, '{prefix}')"
    text = f"lower(e.{column}::text)"
    last = key.rsplit(".", 1)[-1]
    before_quote = like_pattern(last).removesuffix("%") + '"%'

    def passes(p: Params, values: Sequence[str]) -> str:
        tests = []
        if _plain(last):
            tests.append(f"{text} like {p(before_quote)}")
        if values and "true" not in values and all(_plain(v) for v in values):
            patterns = [like_pattern(v) for v in values]
            tests.append(f"{text} like any({p(patterns)}::text[])")
        return "".join(f"{test} and " for test in tests)

    def match(values: Sequence[str], p: Params) -> str:
        found = (
            f"exists (select 1 from {pairs} s where s.key = {p(key)} "
            f"and s.value = any({p(list(values))}::text[]))"
        )
        return f"({passes(p, values)}{found})"

    def exists(p: Params) -> str:
        return f"({passes(p, ())}exists (select 1 from {pairs} s where s.key = {p(key)}))"

    return Field(
        match=match,
        exists=exists,
        contains=lambda pattern, p: (
            f"exists (select 1 from {pairs} s where s.key = {p(key)} and s.value like {p(pattern)})"
        ),
        facet=lambda p: f"select s.original from {pairs} s where s.key = {p(key)}",
    )


def _plain(text: str) -> bool:
    """Whether ``text`` appears as itself in a JSON document's text (JSON escapes quotes,
    backslashes and control characters)."""
    return not any(c in '"\\' or c < " " for c in text)


_COLUMNS: Final = {
    "metadata.name": _column("name", folded=True, nullable=False),
    # Stored lowercase, as refs are.
    "metadata.namespace": _column("namespace", folded=False, nullable=False, counted="namespace"),
    "metadata.title": _column("title", folded=True, nullable=True),
    "metadata.description": _column("description", folded=True, nullable=True),
    "spec.type": _column("spec_type", folded=True, nullable=True, counted="type"),
    "spec.lifecycle": _column("lifecycle", folded=True, nullable=True, counted="lifecycle"),
}


def field_of(key: str) -> Field:
    """The field a key names (as written: the message quotes it); FilterError for a key
    Atrium keeps nothing under."""
    lowered = key.lower()
    found = _COLUMNS.get(lowered)
    if found is not None:
        return found
    if lowered == "kind":
        return _kind()
    if lowered == "apiversion":
        return _api_version()
    root, _, rest = lowered.partition(".")
    if root == "spec":
        return _pairs("spec", "spec", lowered) if rest else _nothing()
    if root == "relations":
        relation = _RELATIONS.get(rest)
        if relation is None:
            raise FilterError(
                f"{key!r}: name a relation type after relations., one of "
                + ", ".join(sorted(INVERSE))
            )
        return _relation(relation)
    if root == "metadata":
        return _metadata(key, rest)
    raise FilterError(
        f"{key!r} is not a field Atrium can filter on: use apiVersion, kind, metadata.*, "
        "spec.* or relations.*"
    )


def _metadata(key: str, rest: str) -> Field:
    section, dot, inner = rest.partition(".")
    if rest == "uid":
        return _uid()
    if rest == "etag":
        return _nothing(facet=False)  # Backstage's search table leaves it out too
    if rest == "tags":
        return _tags()
    if section == "tags" and dot:
        return _tag(inner)
    if section in ("labels", "annotations"):
        return _mapping(section, inner) if dot and inner else _nothing()
    if section == "links":
        return _pairs("links", "metadata.links", f"metadata.{rest}")
    raise FilterError(
        f"{key!r}: Atrium keeps no such metadata; it has name, namespace, uid, etag, title, "
        "description, labels, annotations, tags and links"
    )
