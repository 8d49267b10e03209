"""The example plugin's committed console module (examples/plugins/oncall) is what its source
builds to, with the console's Vite, from the plugin's own folder as its README says."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "plugins" / "oncall"


def test_the_committed_module_is_built_from_its_source(tmp_path: Path) -> None:
    vite = ROOT / "web" / "node_modules" / ".bin" / "vite"
    done = subprocess.run(
        [str(vite), "build", "--config", "console-src/vite.config.mjs"],
        cwd=EXAMPLE,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "ONCALL_CONSOLE_OUT": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    committed = EXAMPLE / "atrium_oncall" / "console" / "panels.js"
    assert (tmp_path / "panels.js").read_text() == committed.read_text(), (
        "rebuild it: npm run build (examples/plugins/oncall)"
    )
    # Built against the SDK, React left to the page's import map; nothing of the console inlined.
    text = committed.read_text()
    assert text.startswith("import { ActionOutcome, ActionStatus, Card, ConfirmAction")
    assert 'from "@atrium/console";\nimport { jsx, jsxs } from "react/jsx-runtime";' in text
    assert "gestalt" not in text and "@apollo" not in text
