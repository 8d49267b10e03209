"""Documents to table rows, as the app's import would store them, fast enough for 250,000.

``validate_entity`` costs ~55 µs a document, most of the generation budget at this scale, so
rows are computed directly from the generated documents (whose shape we control), and a
sample is cross-checked against ``validate_entity``: if the model changes how it stores an
entity, the benchmark fails loudly instead of measuring data the app would never write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from sources.catalog.model import RELATION_PAIRS, validate_entity
from sources.catalog.vocabulary import trigrams, words

__all__ = [
    "ENTITY_COLUMNS",
    "RELATION_COLUMNS",
    "Rows",
    "RowsMismatch",
    "build_rows",
]

ENTITY_COLUMNS: Final = (
    "ref",
    "kind",
    "namespace",
    "name",
    "title",
    "description",
    "spec_type",
    "lifecycle",
    "owner_ref",
    "system_ref",
    "tags",
    "labels",
    "annotations",
    "links",
    "spec",
    "hash",
    "origin",
)
RELATION_COLUMNS: Final = ("source_ref", "type", "target_ref", "origin_ref")

_INVERSE: Final = {**RELATION_PAIRS, **{b: a for a, b in RELATION_PAIRS.items()}}
# The spec fields the generator writes: (relation, default kind of a target without one).
_REFS: Final = {
    "owner": ("ownedBy", "group"),
    "system": ("partOf", "system"),
    "domain": ("partOf", "domain"),
    "parent": ("childOf", "group"),
    "memberOf": ("memberOf", "group"),
    "providesApis": ("providesApi", "api"),
    "consumesApis": ("consumesApi", "api"),
    "dependsOn": ("dependsOn", "component"),
}
RelationRow = tuple[str, str, str, str]
# Check one document in this many against the app's own validation.
_SAMPLE_EVERY: Final = 97


class RowsMismatch(AssertionError):
    """The fast path and ``validate_entity`` disagree: fix ``bench/rows.py``."""


@dataclass(slots=True)
class Rows:
    entities: list[tuple[Any, ...]] = field(default_factory=list)
    relations: list[RelationRow] = field(default_factory=list)
    terms: list[tuple[str, int]] = field(default_factory=list)
    trigrams: list[tuple[str, str]] = field(default_factory=list)
    checked: int = 0


def _ref(text: str, default_kind: str) -> str:
    kind, sep, name = text.partition(":")
    if not sep:
        kind, name = default_kind, text
    return f"{kind}:default/{name}".lower()


def _entity_row(origin: str, doc: dict[str, Any]) -> tuple[tuple[Any, ...], list[RelationRow]]:
    metadata, spec = doc["metadata"], doc["spec"]
    kind = doc["kind"]
    ref = f"{kind}:default/{metadata['name']}".lower()
    relations: dict[RelationRow, None] = {}
    single: dict[str, str] = {}
    for key, (relation, default_kind) in _REFS.items():
        value = spec.get(key)
        if value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            target = _ref(item, default_kind)
            relations[(ref, relation, target, ref)] = None
            relations[(target, _INVERSE[relation], ref, ref)] = None
            if not isinstance(value, list):
                single[key] = target
    digest = hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()
    row = (
        ref,
        kind,
        "default",
        metadata["name"],
        metadata.get("title"),
        metadata.get("description"),
        spec.get("type"),
        spec.get("lifecycle"),
        single.get("owner"),
        single.get("system") or single.get("domain"),
        metadata.get("tags", []),
        metadata.get("labels", {}),
        metadata.get("annotations", {}),
        metadata.get("links", []),
        spec,
        digest,
        origin,
    )
    return row, list(relations)


def _check(origin: str, doc: dict[str, Any], row: tuple[Any, ...], relations: list[Any]) -> None:
    entity = validate_entity(doc)
    expected = (
        entity.ref,
        entity.kind,
        entity.namespace,
        entity.name,
        entity.title,
        entity.description,
        entity.spec_type,
        entity.lifecycle,
        entity.owner_ref,
        entity.system_ref,
        entity.tags,
        entity.labels,
        entity.annotations,
        entity.links,
        entity.spec,
        entity.hash,
        origin,
    )
    for column, mine, theirs in zip(ENTITY_COLUMNS, row, expected, strict=True):
        if mine != theirs:
            raise RowsMismatch(f"{entity.ref}: {column} is {mine!r}, the app stores {theirs!r}")
    theirs_relations = {(r.source_ref, r.type, r.target_ref, entity.ref) for r in entity.relations}
    if set(relations) != theirs_relations:
        raise RowsMismatch(
            f"{entity.ref}: relations differ: only here {set(relations) - theirs_relations}, "
            f"only in the app {theirs_relations - set(relations)}"
        )


def build_rows(documents: Iterable[tuple[str, dict[str, Any]]]) -> Rows:
    """Entity and relation rows, and the search vocabulary of names and titles.

    The vocabulary is what ``sources.catalog.vocabulary.record_terms`` writes: every word of
    a name or title, its trigram count, and one row per (trigram, word).
    """
    rows = Rows()
    vocabulary: set[str] = set()
    for index, (origin, doc) in enumerate(documents):
        row, relations = _entity_row(origin, doc)
        if index % _SAMPLE_EVERY == 0:
            _check(origin, doc, row, relations)
            rows.checked += 1
        rows.entities.append(row)
        rows.relations.extend(relations)
        vocabulary.update(words(row[3]))
        vocabulary.update(words(row[4]))
    for term in sorted(vocabulary):
        grams = trigrams(term)
        rows.terms.append((term, len(grams)))
        rows.trigrams.extend((gram, term) for gram in sorted(grams))
    return rows
