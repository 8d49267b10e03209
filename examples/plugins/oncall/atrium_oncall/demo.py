"""What the plugin adds to ``atrium serve --demo``: rotations for the demo organisation's teams
(demo/rotations.yaml), unless a rotations file is configured already."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["DEMO_ROTATIONS", "demo"]

DEMO_ROTATIONS = Path(__file__).parent / "demo" / "rotations.yaml"


@contextmanager
def demo(catalog: Path, data: Path) -> Iterator[dict[str, str]]:
    if os.environ.get("ATRIUM_ONCALL_ROTATIONS_FILE"):
        yield {}
        return
    yield {"ATRIUM_ONCALL_ROTATIONS_FILE": str(DEMO_ROTATIONS)}
