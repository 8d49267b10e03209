"""Persisted GraphQL documents, by the SHA-256 of their text."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sources.db import Executor

__all__ = [
    "PersistedDocument",
    "document_hash",
    "find_document",
    "store_document",
    "trust_documents",
]

_FIND = "select body, trusted from persisted_queries where hash = $1"
_STORE = "insert into persisted_queries (hash, body) values ($1, $2) on conflict do nothing"
_TRUST = """
insert into persisted_queries (hash, body, trusted, name)
select * from unnest($1::text[], $2::text[], $3::boolean[], $4::text[])
on conflict (hash) do update set trusted = true, name = excluded.name, body = excluded.body
"""


@dataclass(frozen=True, slots=True)
class PersistedDocument:
    body: str
    trusted: bool


def document_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def find_document(db: Executor, digest: str) -> PersistedDocument | None:
    row = await db.fetchrow(_FIND, digest)
    return PersistedDocument(row["body"], row["trusted"]) if row is not None else None


async def store_document(db: Executor, digest: str, body: str) -> None:
    await db.execute(_STORE, digest, body)


async def trust_documents(db: Executor, documents: list[tuple[str, str, str | None]]) -> None:
    """(hash, body, operation name) triples, all trusted from now on."""
    await db.execute(
        _TRUST,
        [d[0] for d in documents],
        [d[1] for d in documents],
        [True] * len(documents),
        [d[2] for d in documents],
    )
