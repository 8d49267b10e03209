"""Pages in a real Chromium, with what happened on them recorded: the test kit's
(``atrium.testing.browser``), which plugins' own tests use too."""

from __future__ import annotations

from atrium.testing.browser import PROBE, ConsolePage, Recorded, console_page, describe

__all__ = ["PROBE", "ConsolePage", "Recorded", "console_page", "describe"]
