"""The search vocabulary: words of entity names and titles, and their trigrams.

PostgreSQL's pg_trgm is not in every distribution (the embedded server has none), so trigram
similarity is computed here, pg_trgm-style, against a table of known words; a query word that
is misspelt is corrected to its nearest known words before the full-text search runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from sources.db import Executor

__all__ = ["corrections", "record_terms", "trigrams", "words"]

_WORD: Final = re.compile(r"[a-z]+|[0-9]+")
MIN_WORD: Final = 3
MAX_WORD: Final = 32
MIN_SIMILARITY: Final = 0.3  # pg_trgm's default similarity_threshold
MAX_CORRECTIONS: Final = 3
CLOSE_TO_BEST: Final = 0.8


def words(text: str | None) -> list[str]:
    """Lowercase alphabetic words worth correcting towards; numbers are never misspelt."""
    if not text:
        return []
    return [
        w for w in _WORD.findall(text.lower()) if MIN_WORD <= len(w) <= MAX_WORD and w.isalpha()
    ]


def trigrams(word: str) -> set[str]:
    """pg_trgm's trigrams of one word: padded with two spaces in front and one behind."""
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


_NEW_TERMS = """
insert into search_terms (term, trigram_count)
select * from unnest($1::text[], $2::smallint[])
on conflict do nothing
returning term
"""
_NEW_TRIGRAMS = """
insert into search_trigrams (trigram, term)
select * from unnest($1::text[], $2::text[])
on conflict do nothing
"""


async def record_terms(tx: Executor, texts: Iterable[str | None]) -> int:
    """Add unseen words of ``texts`` to the vocabulary; returns how many were new."""
    found = sorted({w for text in texts for w in words(text)})
    if not found:
        return 0
    grams = {w: trigrams(w) for w in found}
    new = [r["term"] for r in await tx.fetch(_NEW_TERMS, found, [len(grams[w]) for w in found])]
    if new:
        pairs = [(g, w) for w in new for g in sorted(grams[w])]
        await tx.execute(_NEW_TRIGRAMS, [g for g, _ in pairs], [w for _, w in pairs])
    return len(new)


# Similarity as pg_trgm computes it: shared / (|a| + |b| - shared). A word that begins a known
# term is being typed, not misspelt, and gets no corrections. Terms that begin with a word sort
# right after it, byte by byte: the first term from the word on (one step of the prefix
# index, text_pattern_ops) begins with it when any does.
_CORRECTIONS = """
with typed as (
    select w.word from (select distinct word from unnest($1::text[]) as w(word)) w
    where starts_with(
        (select t.term from search_terms t where t.term ~>=~ w.word order by t.term using ~<~
         limit 1),
        w.word)
),
q as (
    select * from unnest($1::text[], $2::text[], $3::smallint[]) as q(word, trigram, n)
    where q.word not in (select word from typed)
),
shared as (
    select q.word, t.term, count(*) as shared, min(q.n) as n
    from q join search_trigrams t on t.trigram = q.trigram
    group by q.word, t.term
),
scored as (
    select s.word, s.term,
           s.shared::real / (s.n + st.trigram_count - s.shared) as similarity
    from shared s join search_terms st on st.term = s.term
)
select word, term, similarity from (
    select *, row_number() over (partition by word order by similarity desc, term) as rank
    from scored where similarity >= $4
) ranked where rank <= $5
"""


async def corrections(db: Executor, query_words: list[str]) -> dict[str, list[str]]:
    """For each word that no known term begins with, the known words most like it.

    Only corrections close to the best one are kept, so ``chekout`` becomes ``checkout``
    without dragging in every word that shares its first letters.
    """
    usable = [w for w in dict.fromkeys(query_words) if MIN_WORD <= len(w) <= MAX_WORD]
    if not usable:
        return {}
    rows = [(w, g, len(grams)) for w in usable for grams in [trigrams(w)] for g in sorted(grams)]
    scored: dict[str, list[tuple[float, str]]] = {}
    for row in await db.fetch(
        _CORRECTIONS,
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        MIN_SIMILARITY,
        MAX_CORRECTIONS,
    ):
        scored.setdefault(row["word"], []).append((row["similarity"], row["term"]))
    found: dict[str, list[str]] = {}
    for word, candidates in scored.items():
        best = max(similarity for similarity, _ in candidates)
        found[word] = [t for s, t in candidates if s >= best * CLOSE_TO_BEST]
    return found
