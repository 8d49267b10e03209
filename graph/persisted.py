"""Apollo's automatic persisted queries, and trusted documents for production.

As Apollo Client and Apollo Server speak it: ``extensions.persistedQuery`` carries ``version``
1 and the ``sha256Hash`` of the exact document text. A hash alone runs the document stored
under it, or answers ``PersistedQueryNotFound`` (HTTP 200, no ``data``) so the client sends the
text too; a document is stored only once it has parsed and validated. In production mode only
trusted documents, loaded from an Apollo persisted-query manifest, run at all.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.http_input import HTTPError
from sources.db import Database
from sources.persisted import (
    PersistedDocument,
    document_hash,
    find_document,
    store_document,
    trust_documents,
)

__all__ = [
    "Document",
    "PersistedQueries",
    "PersistedQueryMiss",
    "read_manifest",
    "trust",
]

_HASH = re.compile(r"^[0-9a-f]{64}$")


class PersistedQueryMiss(Exception):
    """A hash Atrium cannot run, answered (HTTP 200, no ``data``) so the client sends the
    document's text next, or gives up on persisted queries."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.error = {"message": message, "extensions": {"code": code}}


@dataclass(frozen=True, slots=True)
class Document:
    """The document an operation runs."""

    text: str | None
    digest: str | None = None  # its hash, when it is a persisted (or trusted) document
    new: bool = False  # sent with its hash and not known yet: kept once it validates


class PersistedQueries:
    """Documents by hash: an in-process LRU in front of PostgreSQL."""

    def __init__(self, *, enabled: bool, trusted_only: bool, capacity: int = 10_000) -> None:
        self.enabled = enabled
        self.trusted_only = trusted_only
        self.capacity = capacity
        self._known: OrderedDict[str, PersistedDocument] = OrderedDict()

    async def document(
        self, db: Database, query: str | None, extensions: dict[str, Any] | None
    ) -> Document:
        """What an operation runs. Raises PersistedQueryMiss for a hash to answer without
        running anything, HTTPError for a request the protocol refuses."""
        persisted = extensions.get("persistedQuery") if extensions else None
        if persisted is None:
            if self.trusted_only:
                text_hash = document_hash(query or "")
                await self._require_trusted(db, text_hash)
                return Document(query, text_hash)
            return Document(query)
        if not isinstance(persisted, dict) or persisted.get("version") != 1:
            raise HTTPError(400, "Unsupported persisted query version")
        digest = persisted.get("sha256Hash")
        if not isinstance(digest, str) or not _HASH.match(digest):
            raise HTTPError(400, "sha256Hash must be 64 lowercase hex digits")
        if not self.enabled and not self.trusted_only:
            raise PersistedQueryMiss("PersistedQueryNotSupported", "PERSISTED_QUERY_NOT_SUPPORTED")
        if query:
            if document_hash(query) != digest:
                raise HTTPError(400, "provided sha does not match query")
            if self.trusted_only:
                await self._require_trusted(db, digest)
                return Document(query, digest)
            return Document(query, digest, new=await self._find(db, digest) is None)
        known = await self._find(db, digest)
        if known is None or (self.trusted_only and not known.trusted):
            raise PersistedQueryMiss("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND")
        return Document(known.body, digest)

    async def learn(self, db: Database, document: Document) -> None:
        """Keep a document sent with its hash, now that it has parsed and validated."""
        if document.new and document.digest is not None and document.text:
            await store_document(db, document.digest, document.text)
            self._remember(document.digest, PersistedDocument(document.text, False))

    async def _find(self, db: Database, digest: str) -> PersistedDocument | None:
        found = self._known.get(digest)
        if found is not None:
            self._known.move_to_end(digest)
            return found
        found = await find_document(db, digest)
        if found is not None:
            self._remember(digest, found)
        return found

    def _remember(self, digest: str, document: PersistedDocument) -> None:
        self._known[digest] = document
        self._known.move_to_end(digest)
        while len(self._known) > self.capacity:
            self._known.popitem(last=False)

    async def _require_trusted(self, db: Database, digest: str) -> None:
        known = await self._find(db, digest)
        if known is None or not known.trusted:
            raise HTTPError(
                400,
                "only trusted documents run in production: add this operation to the "
                "persisted-query manifest and load it with `atrium persisted load`",
                code="OPERATION_NOT_TRUSTED",
            )


def read_manifest(path: Path) -> list[tuple[str, str, str | None]]:
    """(hash, body, name) of every operation of an Apollo persisted-query manifest, checked."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read the manifest: {exc}") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != "apollo-persisted-query-manifest"
        or manifest.get("version") != 1
        or not isinstance(manifest.get("operations"), list)
    ):
        raise ValueError(
            f"{path}: not an Apollo persisted-query manifest (format "
            "apollo-persisted-query-manifest, version 1, operations)"
        )
    documents = []
    for index, operation in enumerate(manifest["operations"]):
        if not isinstance(operation, dict) or not isinstance(operation.get("body"), str):
            raise ValueError(f"{path}: operations[{index}] has no body")
        body, digest = operation["body"], operation.get("id")
        if digest != document_hash(body):
            raise ValueError(f"{path}: operations[{index}].id is not the SHA-256 of its body")
        name = operation.get("name")
        documents.append((digest, body, name if isinstance(name, str) else None))
    return documents


async def trust(db: Database, documents: list[tuple[str, str, str | None]]) -> None:
    if documents:
        await trust_documents(db, documents)
