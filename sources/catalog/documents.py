"""Reading ``catalog-info.yaml`` text into validated entities and precise errors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from sources.catalog.model import Entity, validate_entity
from sources.errors import EntityValidationError

__all__ = ["DocumentError", "ParsedBatch", "parse_documents", "read_paths"]

# Files we look for when a directory is given.
_PATTERNS = ("*.yaml", "*.yml")


@dataclass(frozen=True, slots=True)
class DocumentError:
    """Why one document (1-based ``document``) of ``location`` was not imported."""

    location: str
    document: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = (
            self.location if self.document is None else f"{self.location} document {self.document}"
        )
        return f"{where}: {self.field + ': ' if self.field else ''}{self.message}"


@dataclass(slots=True)
class ParsedBatch:
    # (origin, entity) pairs; the origin is the file or the API caller that supplied it.
    entities: list[tuple[str, Entity]]
    errors: list[DocumentError]
    # Origins read whole, without any error: entities they once held and no longer do may go.
    complete_origins: set[str]


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings: entities are JSON, not Python dates."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_documents(text: str, location: str) -> ParsedBatch:
    """Every document of a multi-document YAML text; empty documents are ignored."""
    batch = ParsedBatch([], [], set())
    ok = True
    index = 0
    try:
        for index, doc in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
            if doc is None:
                continue
            try:
                batch.entities.append((location, validate_entity(doc)))
            except EntityValidationError as exc:
                ok = False
                batch.errors.append(DocumentError(location, index, exc.field, exc.message))
    except yaml.YAMLError as exc:
        ok = False
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        batch.errors.append(
            DocumentError(location, index + 1, None, f"invalid YAML{line}: {problem}")
        )
    if ok:
        batch.complete_origins.add(location)
    return batch


def read_paths(paths: Iterable[Path]) -> ParsedBatch:
    """Files as given, and directories searched recursively for YAML files."""
    batch = ParsedBatch([], [], set())
    for path in _expand(paths):
        location = str(path.resolve())
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            batch.errors.append(DocumentError(location, None, None, f"cannot read: {exc}"))
            continue
        one = parse_documents(text, location)
        batch.entities.extend(one.entities)
        batch.errors.extend(one.errors)
        batch.complete_origins |= one.complete_origins
    return batch


def _expand(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            found = {p for pattern in _PATTERNS for p in path.rglob(pattern)}
            yield from sorted(found)
        else:
            yield path
