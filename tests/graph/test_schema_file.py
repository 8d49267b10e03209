from __future__ import annotations

from pathlib import Path

from graph.schema_file import schema_sdl
from graph.settings import Settings

COMMITTED = Path(__file__).resolve().parent.parent.parent / "schema.graphql"


def test_committed_schema_matches_the_generated_one() -> None:
    generated = schema_sdl(Settings(), plugins=[])
    assert COMMITTED.read_text() == generated, (
        "schema.graphql is out of date: review the change, then run `make schema`"
    )
