"""Reading ``catalog-info.yaml`` text into validated entities and precise errors.

Three steps: every file's YAML documents are loaded, their placeholders substituted
(``sources.catalog.placeholders``), then each is validated.

A directory holds more YAML than catalog files: the OpenAPI definition beside its
catalog-info.yaml that a placeholder reads, CI workflows, Kubernetes manifests. Found in a
directory, a file none of whose documents means to be an entity (a Backstage apiVersion, or a
kind of the catalog) is skipped, not rejected; a file named on its own is always validated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from sources.catalog.model import Entity, validate_entity
from sources.catalog.placeholders import FetchPolicy, Placeholders, Substituted
from sources.catalog.refs import KINDS
from sources.errors import EntityValidationError
from sources.yaml_json import Yaml12Loader, yaml_problem

__all__ = ["DocumentError", "ParsedBatch", "UnavailableField", "parse_documents", "read_paths"]

# Files we look for when a directory is given.
_PATTERNS = ("*.yaml", "*.yml")
_CATALOG_KINDS = frozenset(kind.lower() for kind in KINDS)


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


@dataclass(frozen=True, slots=True)
class UnavailableField:
    """A field an entity was stored without: its placeholder could not be read (``reason``
    names the placeholder and why). The next import tries again."""

    location: str
    document: int  # 1-based, in ``location``
    ref: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location} document {self.document} ({self.ref}): {self.field}: {self.reason}"


@dataclass(slots=True)
class ParsedBatch:
    # (origin, entity) pairs; the origin is the file or the API caller that supplied it.
    entities: list[tuple[str, Entity]]
    errors: list[DocumentError]
    # Origins read whole, without any error: entities they once held and no longer do may go.
    complete_origins: set[str]
    # YAML files found in a directory that declare no entity (definitions, say).
    skipped: list[str] = field(default_factory=list)
    # Fields of the entities above stored empty, their placeholder unreadable.
    unavailable: list[UnavailableField] = field(default_factory=list)


class _Loader(Yaml12Loader):
    """Catalog files are YAML 1.2, as in Backstage; entities are JSON: timestamps stay
    strings, and what JSON or PostgreSQL cannot hold (a NUL, a number beyond 64 bits,
    nesting without end) is a YAML error with its line."""


@dataclass(slots=True)
class _File:
    """One text's documents as loaded, before placeholders and validation."""

    location: str
    path: Path | None  # the file, for placeholders relative to it
    root: Path | None  # the tree being imported
    searched: bool = False  # found in a directory, not named: skipped if it declares nothing
    documents: list[tuple[int, Any]] = field(default_factory=list)  # (1-based index, document)
    # Documents whose values could not be built (a key given twice, say): the others are
    # read on, as Backstage reads on past a document with errors.
    bad: list[DocumentError] = field(default_factory=list)
    error: DocumentError | None = None  # YAML that stopped parsing, after the documents above


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
        return _parsed([file], placeholders)
    with Placeholders(fetch) as reader:
        return _parsed([file], reader)


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
            file = _load(text, location, path, root)
            file.searched = path != given
            files.append(file)
    with Placeholders(fetch) as placeholders:
        batch = _parsed(files, placeholders)
    batch.errors[:0] = errors
    return batch


def _load(text: str, location: str, path: Path | None, root: Path | None) -> _File:
    file = _File(location, path, root)
    loader = _Loader(text)
    index = reading = 0
    try:
        while True:
            reading = index + 1  # the document being read, if there is one
            if not loader.check_data():  # type: ignore[no-untyped-call]  # untyped in the stubs
                break
            index = reading
            try:
                doc = loader.get_data()
            except ConstructorError as exc:
                # Raised once the document was read whole: the next one reads as usual.
                loader.constructed_objects, loader.recursive_objects = {}, {}
                loader.state_generators, loader.deep_construct = [], False
                file.bad.append(DocumentError(location, index, None, _invalid(exc)))
                continue
            if doc is not None:
                file.documents.append((index, doc))
    except yaml.YAMLError as exc:
        file.error = DocumentError(location, reading, None, _invalid(exc))
    finally:
        loader.dispose()
    return file


def _invalid(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    line = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return f"invalid YAML{line}: {yaml_problem(exc)}"


def _parsed(files: list[_File], placeholders: Placeholders) -> ParsedBatch:
    batch = ParsedBatch([], [], set())
    # Files placeholders name are data even when they do not parse: their error is the
    # placeholder's, reported against the field that names them.
    named = {
        path
        for f in files
        if f.path is not None and f.root is not None
        for _, doc in f.documents
        for path in placeholders.files_named(doc, f.path, f.root)
    }
    others = [
        f
        for f in files
        if f.searched
        and not any(_meant(doc) for _, doc in f.documents)
        and (f.documents or Path(f.location) in named)
    ]
    # Read whole, declaring nothing: whatever such a file once declared is gone.
    batch.skipped = [f.location for f in others]
    batch.complete_origins.update(f.location for f in others if f.error is None and not f.bad)
    skipped = {id(f) for f in others}
    files = [f for f in files if id(f) not in skipped]
    placeholders.prefetch(doc for file in files for _, doc in file.documents)
    for file in files:
        ok = file.error is None and not file.bad
        batch.errors.extend(file.bad)
        for index, doc in file.documents:
            substituted = placeholders.substitute(doc, file.path, file.root)
            try:
                entity = validate_entity(substituted.document, substituted.unavailable)
            except EntityValidationError as exc:
                ok = False
                message = _explained(exc, substituted)
                batch.errors.append(DocumentError(file.location, index, exc.field, message))
            else:
                batch.entities.append((file.location, entity))
                batch.unavailable.extend(
                    UnavailableField(file.location, index, entity.ref, path, reason)
                    for path, reason in entity.unavailable.items()
                )
        if file.error is not None:
            batch.errors.append(file.error)
        if ok:
            batch.complete_origins.add(file.location)
        # What the file held lives on in its entities; the rest can go now, not at the end.
        file.documents.clear()
    return batch


def _explained(exc: EntityValidationError, substituted: Substituted) -> str:
    """The validation error, saying so when the field's value came from a placeholder, or
    when the placeholder that should have given it could not be read."""
    reason = _covering(substituted.unavailable, exc.field)
    if reason is not None:
        return f"{exc.message}; its placeholder could not be read: {reason}"
    source = _covering(substituted.filled, exc.field)
    if source is None:
        return exc.message
    hint = "; $text reads a file as text" if "expected a string" in exc.message else ""
    return f"{exc.message} (the value {source} read{hint})"


def _covering(by_path: dict[str, str], where: str | None) -> str | None:
    """The entry for ``where`` or for the field that holds it (spec.remotes for
    spec.remotes[0].url)."""
    if where is None:
        return None
    for path, entry in by_path.items():
        if where == path or where.startswith((f"{path}.", f"{path}[")) or path == "(document)":
            return entry
    return None


def _meant(doc: Any) -> bool:
    """Whether ``doc`` means to be an entity, valid or not."""
    if not isinstance(doc, dict):
        return False
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    return (isinstance(api_version, str) and "backstage.io/" in api_version) or (
        isinstance(kind, str) and kind.lower() in _CATALOG_KINDS
    )


def _expand(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            found = {p for pattern in _PATTERNS for p in path.rglob(pattern)}
            yield from sorted(found)
        else:
            yield path
