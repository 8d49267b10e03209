"""How big and how long the catalog scenario runs, and the deployments scenario on its catalog:
what ``python -m bench`` read from its command line (``bench.__main__``'s ``Run.options``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Options"]


@dataclass(frozen=True, slots=True)
class Options:
    entities: int
    rounds: int
    warmup: int
    seed: int
    explain_all: bool
    # Measuring stops early (after at least 20 rounds) past this, to keep a run near 5 minutes.
    budget_s: float = 150.0
    # A full import of the catalog through `atrium catalog import`'s code, then a no-change one.
    imports: bool = True
    # ``python -m bench --smoke``: also the fewest requests where no option says how many
    # (the replica's, the deployments' webhooks).
    smoke: bool = False
