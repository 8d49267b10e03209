"""A real Alertmanager (Debian's prometheus-alertmanager) for tests, on a free port, with no
cluster listener; alerts posted to it as Prometheus posts them."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.http_files import free_port, wait_ready

ALERTMANAGER = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
CONFIG = """route:
  receiver: nobody
  group_wait: 1h
receivers:
  - name: nobody
"""


@dataclass
class RunningAlertmanager:
    url: str
    process: subprocess.Popen[bytes]

    def fire(self, *alerts: dict[str, Any]) -> None:
        """Post alerts (labels, annotations) as firing for the next hour."""
        now = datetime.now(UTC)
        body = [
            {
                "labels": a["labels"],
                "annotations": a.get("annotations", {}),
                "startsAt": (now - timedelta(minutes=5)).isoformat(),
                "endsAt": (now + timedelta(hours=1)).isoformat(),
            }
            for a in alerts
        ]
        answer = httpx.post(f"{self.url}/api/v2/alerts", json=body, timeout=5)
        assert answer.status_code == 200, answer.text

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@contextmanager
def alertmanager(root: Path) -> Iterator[RunningAlertmanager]:
    root.mkdir(parents=True, exist_ok=True)
    config = root / "alertmanager.yml"
    config.write_text(CONFIG)
    port = free_port()
    process = subprocess.Popen(
        [
            ALERTMANAGER,
            f"--config.file={config}",
            f"--storage.path={root / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    running = RunningAlertmanager(f"http://127.0.0.1:{port}", process)
    try:
        wait_ready(f"{running.url}/-/ready", "Alertmanager")
        yield running
    finally:
        running.stop()
