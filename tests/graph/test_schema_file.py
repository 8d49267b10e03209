from __future__ import annotations

from pathlib import Path

from graph.schema_file import schema_sdl
from graph.settings import Settings
from plugins.deployments import DeploymentsPlugin
from plugins.observability import ObservabilityPlugin
from plugins.pincompute import PinComputePlugin

COMMITTED = Path(__file__).resolve().parent.parent.parent / "schema.graphql"


def test_committed_schema_matches_the_generated_one() -> None:
    # What a default installation serves: the core and the bundled plugins.
    generated = schema_sdl(
        Settings(), plugins=[DeploymentsPlugin(), ObservabilityPlugin(), PinComputePlugin()]
    )
    assert COMMITTED.read_text() == generated, (
        "schema.graphql is out of date: review the change, then run `make schema`"
    )
