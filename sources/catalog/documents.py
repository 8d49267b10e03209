"""Reading ``catalog-info.yaml`` text into validated entities and precise errors.

Three steps: every file's YAML documents are loaded, their placeholders substituted
(``sources.catalog.placeholders``), then each is validated. A YAML file that a placeholder
read (an OpenAPI definition beside its catalog file, say) is not a catalog file, and is
skipped unless it declares entities itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sources.catalog.model import Entity, validate_entity
from sources.catalog.placeholders import FetchPolicy, Placeholders, Substituted
from sources.errors import EntityValidationError
from sources.yaml_json import JsonYamlLoader

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
    # YAML files found in a directory that are not catalog files: placeholders read them.
    skipped: list[str] = field(default_factory=list)


class _Loader(JsonYamlLoader):
    """Entities are JSON: timestamps stay strings, and what JSON or PostgreSQL cannot hold
    (a NUL, a number beyond 64 bits, nesting without end) is a YAML error with its line."""


@dataclass(slots=True)
class _File:
    """One text's documents as loaded, before placeholders and validation."""

    location: str
    path: Path | None  # the file, for placeholders relative to it
    root: Path | None  # the tree being imported
    documents: list[tuple[int, Any]] = field(default_factory=list)  # (1-based index, document)
    error: DocumentError | None = None  # YAML that stopped parsing, after the documents above
    substituted: list[tuple[int, Substituted]] = field(default_factory=list)


def parse_documents(
    text: str,
    location: str,
    *,
    base: Path | None = None,
    root: Path | None = None,
    placeholders: Placeholders | None = None,
    fetch: FetchPolicy | None = None,
) -> ParsedBatch:
    """Every document of a multi-document YAML text; empty documents are ignored. ``base`` is
    the file the text came from and ``root`` the tree being imported, for placeholders naming
    files; without them only URLs ``fetch`` allows can be read. Blocking when placeholders
    name URLs: from async code, run it in a thread."""
    file = _load(text, location, base, root)
    if placeholders is not None:
        return _parsed([file], placeholders, skip_read=False)
    with Placeholders(fetch) as reader:
        return _parsed([file], reader, skip_read=False)


def read_paths(paths: Iterable[Path], fetch: FetchPolicy | None = None) -> ParsedBatch:
    """Files as given, and directories searched recursively for YAML files. Placeholders may
    name files inside the path they were found under (a directory given, or a file's own
    directory) and URLs ``fetch`` allows. Blocking: from async code, run it in a thread."""
    files: list[_File] = []
    errors: list[DocumentError] = []
    for given in paths:
        root = given if given.is_dir() else given.parent
        for path in _expand([given]):
            location = str(path.resolve())
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                errors.append(DocumentError(location, None, None, f"cannot read: {exc}"))
                continue
            files.append(_load(text, location, path, root))
    with Placeholders(fetch) as placeholders:
        batch = _parsed(files, placeholders, skip_read=True)
    batch.errors[:0] = errors
    return batch


def _load(text: str, location: str, path: Path | None, root: Path | None) -> _File:
    file = _File(location, path, root)
    index = 0
    try:
        for index, doc in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
            if doc is not None:
                file.documents.append((index, doc))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        file.error = DocumentError(location, index + 1, None, f"invalid YAML{line}: {problem}")
    return file


def _parsed(files: list[_File], placeholders: Placeholders, *, skip_read: bool) -> ParsedBatch:
    for file in files:
        file.substituted = [
            (index, placeholders.substitute(doc, file.path, file.root))
            for index, doc in file.documents
        ]
    batch = ParsedBatch([], [], set())
    for file in files:
        if (
            skip_read
            and file.path is not None
            and file.path.resolve() in placeholders.files_read
            and not any(_declares_entity(doc) for _, doc in file.documents)
        ):
            batch.skipped.append(file.location)
            continue
        ok = file.error is None
        for index, substituted in file.substituted:
            try:
                entity = validate_entity(substituted.document, substituted.unavailable)
            except EntityValidationError as exc:
                ok = False
                batch.errors.append(DocumentError(file.location, index, exc.field, exc.message))
            else:
                batch.entities.append((file.location, entity))
        if file.error is not None:
            batch.errors.append(file.error)
        if ok:
            batch.complete_origins.add(file.location)
    return batch


def _declares_entity(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("backstage.io/")


def _expand(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            found = {p for pattern in _PATTERNS for p in path.rglob(pattern)}
            yield from sorted(found)
        else:
            yield path
