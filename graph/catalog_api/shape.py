"""Entities in Backstage's JSON shape, and Backstage's ``fields`` selection of parts of them."""

from __future__ import annotations

import hashlib
from typing import Any, Final

import orjson

from resolvers.backstage import Served
from sources.catalog.search_keys import API_VERSION, FilterError
from sources.catalog.uids import entity_uid

__all__ = ["entity_json", "needs_relations", "parse_fields", "select_fields"]

MAX_FIELDS: Final = 100


def entity_json(served: Served) -> dict[str, Any]:
    """``apiVersion``, ``kind``, ``metadata`` (with ``uid`` and ``etag``), ``spec`` as
    stored and ``relations`` as ``{type, targetRef}``. Fields an entity does not have are
    left out rather than null, as a catalog-info.yaml leaves them out."""
    record = served.record
    metadata: dict[str, Any] = {"namespace": record.namespace, "name": record.name}
    for key, value in (
        ("title", record.title),
        ("description", record.description),
        ("labels", record.labels),
        ("annotations", record.annotations),
        ("tags", record.tags),
        ("links", record.links),
    ):
        if value:
            metadata[key] = value
    metadata["uid"] = entity_uid(record.id)
    entity = {
        "apiVersion": API_VERSION,
        "kind": record.kind,
        "metadata": metadata,
        "spec": record.spec,
        "relations": [
            {"type": relation, "targetRef": target}
            for relation in sorted(served.relations)
            for target in served.relations[relation]
        ],
    }
    # As Backstage's: it changes whenever anything of the entity does, relations included.
    canonical = orjson.dumps(entity, option=orjson.OPT_SORT_KEYS)
    metadata["etag"] = hashlib.blake2b(canonical, digest_size=16).hexdigest()
    return entity


def parse_fields(values: list[str]) -> list[str] | None:
    """``fields`` parameters (repeated, or comma-separated) as paths; None for the whole
    entity."""
    fields = [f.strip() for value in values for f in value.split(",") if f.strip()]
    if not fields:
        return None
    if len(fields) > MAX_FIELDS:
        raise FilterError(f"fields: at most {MAX_FIELDS}")
    for field in fields:
        if "[" in field:
            raise FilterError("invalid fields, array type fields are not supported")
        if len(field) > 200 or "\x00" in field:
            raise FilterError(f"fields: {field[:40]!r} is not a path into an entity")
    return fields


def needs_relations(fields: list[str] | None) -> bool:
    """Whether what ``fields`` keep depends on relations (the etag does too)."""
    if fields is None:
        return True
    return any(
        f in ("relations", "metadata", "metadata.etag") or f.startswith("relations.")
        for f in fields
    )


def select_fields(entity: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """Only the parts ``fields`` name, each where it was (lodash's ``get`` and ``set``, as
    Backstage's catalog does it)."""
    if fields is None:
        return entity
    kept: dict[str, Any] = {}
    for field in fields:
        path = field.split(".")
        value: Any = entity
        for step in path:
            if not isinstance(value, dict) or step not in value:
                break
            value = value[step]
        else:
            target = kept
            for step in path[:-1]:
                target = target.setdefault(step, {})
            target[path[-1]] = value
    return kept
