"""A real Prometheus (Debian's package) for tests: history backfilled with promtool, served on
a free port, its query log kept so tests count the queries it answered."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.http_files import free_port, wait_ready

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


@dataclass
class RunningPrometheus:
    url: str
    query_log: Path
    process: subprocess.Popen[bytes]

    def queries(self) -> list[str]:
        """The range and instant queries it answered, from its own query log."""
        if not self.query_log.exists():
            return []
        import json

        return [
            json.loads(line)["params"]["query"]
            for line in self.query_log.read_text().splitlines()
            if line.strip()
        ]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def openmetrics(series: dict[str, list[tuple[int, float]]]) -> str:
    """OpenMetrics text of ``name{labels}`` → [(unix seconds, value)], time-ordered: counters
    for names ending in ``_total``, gauges for the others."""
    lines = []
    for name in sorted({s.partition("{")[0] for s in series}):
        kind = "counter" if name.endswith("_total") else "gauge"
        lines.append(f"# TYPE {name} {kind}")
        for key, points in series.items():
            if key.partition("{")[0] == name:
                lines += [f"{key} {value} {at}" for at, value in points]
    return "\n".join([*lines, "# EOF"]) + "\n"


@contextmanager
def prometheus(root: Path, history: str) -> Iterator[RunningPrometheus]:
    """Prometheus on 127.0.0.1 with ``history`` (OpenMetrics) backfilled; stopped after."""
    data = root / "prometheus-data"
    data.mkdir(parents=True)
    (root / "history.om").write_text(history)
    subprocess.run(
        [
            PROMTOOL,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(root / "history.om"),
            str(data),
        ],
        check=True,
        capture_output=True,
    )
    query_log = root / "queries.log"
    config = root / "prometheus.yml"
    config.write_text(f"global:\n  query_log_file: {query_log}\n")
    port = free_port()
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    running = RunningPrometheus(f"http://127.0.0.1:{port}", query_log, process)
    try:
        wait_ready(f"{running.url}/-/ready", "Prometheus")
        yield running
    finally:
        running.stop()
