from __future__ import annotations

from sources.catalog.vocabulary import corrections, record_terms, trigrams, words
from sources.db import Database


def test_trigrams_are_pg_trgm_s() -> None:
    assert trigrams("cat") == {"  c", " ca", "cat", "at "}


def test_words_skip_numbers_and_short_words() -> None:
    assert words("Checkout-Service v2 of 2024 ab") == ["checkout", "service"]


async def test_misspelt_words_are_corrected_and_typed_prefixes_are_not(db: Database) -> None:
    async with db.transaction() as tx:
        new = await record_terms(tx, ["checkout service", "Chen", "payments gateway", "checkout"])
    assert new == 5
    fixes = await corrections(db, ["chekout", "paymnets", "check", "service", "zzzzzz"])
    assert fixes == {"chekout": ["checkout"], "paymnets": ["payments"]}
