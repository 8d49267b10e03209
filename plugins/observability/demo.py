"""The demo's Prometheus and Alertmanager (``atrium serve --demo``): Debian's binaries, each on
127.0.0.1 and a free port for as long as the demo runs, with their data under the data
directory. Prometheus starts on a day of the demo services' history (written with promtool),
then scrapes the same series, carried on, from a small exporter in this process; Alertmanager
starts with the demo's incidents firing. A backend that is configured is left alone; one whose
binaries are missing, or that does not start, is said once, with how to connect a real one."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import httpx

from plugins.observability.demo_series import HISTORY, STEP, DemoService, World, demo_services
from plugins.observability.settings import ObservabilitySettings

__all__ = ["ALERTMANAGER", "PROMETHEUS", "NotStarted", "demo_backends"]

log = logging.getLogger("atrium.observability.demo")

READY_WITHIN: Final = 15.0  # seconds a server may take to answer its readiness check
STOP_WITHIN: Final = 10.0  # seconds a server may take to stop on SIGTERM before it is killed
# Seconds of history written before Prometheus starts; the rest of the day is written
# EARLIER_AFTER seconds later, out of the server's start-up's way.
RECENT: Final = 2 * 3600
EARLIER_AFTER: Final = 10.0
RUNBOOKS: Final = "https://runbooks.junipermarket.example"
# Alertmanager resolves an alert whose endsAt has passed: far ahead, it fires while the demo runs.
FIRING_FOR: Final = timedelta(days=30)
PROMETHEUS_CONFIG: Final = """global:
  scrape_interval: 15s
scrape_configs:
  - job_name: demo
    static_configs:
      - targets: ["{target}"]
    # The series are the history's: no job or instance label of this scrape's.
    metric_relabel_configs:
      - action: labeldrop
        regex: job|instance
"""
ALERTMANAGER_CONFIG: Final = """route:
  receiver: demo
receivers:
  - name: demo
"""


class NotStarted(Exception):
    """A demo backend that is missing or did not start; the message says why."""

    def __init__(self, message: str, *, installed: bool = True) -> None:
        super().__init__(message)
        self.installed = installed


@dataclass(frozen=True, slots=True)
class _Backend:
    name: str
    variable: str
    package: str  # Debian's
    panels: str  # what the console's panels show of it


PROMETHEUS: Final = _Backend("Prometheus", "ATRIUM_PROMETHEUS_URL", "prometheus", "metrics")
ALERTMANAGER: Final = _Backend(
    "Alertmanager", "ATRIUM_ALERTMANAGER_URL", "prometheus-alertmanager", "alerts"
)


@contextlib.contextmanager
def demo_backends(
    settings: ObservabilitySettings, catalog: Path, data_dir: Path
) -> Iterator[dict[str, str]]:
    """Start the backends ``settings`` leaves unconfigured; yield the settings naming them.
    What runs is logged, and what is missing, once, with how to connect a real one."""
    began = time.monotonic()
    started = time.time()
    services = demo_services(catalog)
    root = data_dir.resolve()
    env: dict[str, str] = {}
    missing: list[tuple[_Backend, NotStarted]] = []
    figures: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        if not settings.alertmanager_url:
            try:
                url, alerts = stack.enter_context(
                    _alertmanager(root / "demo-alertmanager", services, started)
                )
                env[ALERTMANAGER.variable] = url
                figures |= {"alertmanager": url, "alerts": alerts}
            except NotStarted as exc:
                missing.append((ALERTMANAGER, exc))
            except OSError as exc:  # its folder, say
                missing.append((ALERTMANAGER, NotStarted(f"it did not start: {exc}")))
        if not settings.prometheus_url:
            try:
                url, series = stack.enter_context(
                    _prometheus(root / "demo-prometheus", services, started)
                )
                env[PROMETHEUS.variable] = url
                figures |= {"prometheus": url, "services": len(services), "series": series}
            except NotStarted as exc:
                missing.append((PROMETHEUS, exc))
            except OSError as exc:
                missing.append((PROMETHEUS, NotStarted(f"it did not start: {exc}")))
        if env:
            served = [b.panels for b in (PROMETHEUS, ALERTMANAGER) if b.variable in env]
            seconds = round(time.monotonic() - began, 2)
            log.info("demo %s serving", " and ".join(served), extra={**figures, "seconds": seconds})
        if missing:
            missing.sort(key=lambda found: found[0] is not PROMETHEUS)
            log.warning(_missing(missing), extra={"missing": [b.name for b, _ in missing]})
        yield env


def _missing(missing: list[tuple[_Backend, NotStarted]]) -> str:
    """What the demo runs without and why, and how to have it."""
    said = " and ".join(f"no {backend.name} ({why})" for backend, why in missing)
    absent = [backend.package for backend, why in missing if not why.installed]
    install = f"install Debian's {' and '.join(absent)} (`make run` does), or " if absent else ""
    variables = " and ".join(backend.variable for backend, _ in missing)
    panels = " and ".join(backend.panels for backend, _ in missing)
    return (
        f"observability: the demo has {said}; {install}set {variables} to connect real "
        f"ones. Until then the console's {panels} panels say they are not configured"
    )


@contextlib.contextmanager
def _prometheus(
    root: Path, services: list[DemoService], started: float
) -> Iterator[tuple[str, int]]:
    """Prometheus on the demo's history, scraping the exporter; yields its URL and how many
    series it holds. The last hours are written before it starts, the rest of the day while
    it runs (it reads new blocks within a minute): the day would take seconds to write."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        absent = [n for n, p in (("prometheus", prometheus), ("promtool", promtool)) if not p]
        raise NotStarted(f"{' and '.join(absent)} not installed", installed=False)
    shutil.rmtree(root, ignore_errors=True)  # a fresh day each time
    data = root / "data"
    data.mkdir(parents=True)
    recent = World(services, started, since=RECENT)
    _backfill(promtool, recent, root / "history", data, threading.Event())
    shutil.rmtree(root / "history")
    with _exporter(recent) as target:
        config = root / "prometheus.yml"
        config.write_text(PROMETHEUS_CONFIG.format(target=target), encoding="utf-8")
        args = [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ]
        with _server(args, root / "prometheus.log") as url:
            # Up to the recent hours' first sample, where counters start again (a restart).
            until = started - (recent.times[0] - STEP)
            earlier = World(services, started, since=HISTORY, until=until)
            stopping = threading.Event()
            writer = threading.Thread(
                target=_write_earlier,
                args=(promtool, earlier, root / "history", data, stopping),
                name="demo-metrics-history",
                daemon=True,
            )
            writer.start()
            try:
                yield url, recent.series
            finally:
                stopping.set()
                writer.join(STOP_WITHIN)


def _write_earlier(
    promtool: str, world: World, work: Path, data: Path, stopping: threading.Event
) -> None:
    """Write the rest of the day once the server has started, at a lower priority: Prometheus
    reads new blocks once a minute, so they are seen no later for it."""
    if stopping.wait(EARLIER_AFTER):
        return
    with contextlib.suppress(OSError):  # this thread, and the promtool it starts
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    began = time.monotonic()
    blocks = work / "blocks"
    try:
        _backfill(promtool, world, work, blocks, stopping)
        for block in blocks.iterdir():
            block.rename(data / block.name)  # whole, as Prometheus should find it
    except _Stopping:
        return
    except (NotStarted, OSError) as exc:
        log.warning("observability: the demo's metrics have their last hours only: %s", exc)
        return
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = round(time.monotonic() - began, 2)
    log.info("demo metrics history written", extra={"hours": HISTORY // 3600, "seconds": seconds})


class _Stopping(Exception):
    """The demo stops while its history is being written."""


def _backfill(
    promtool: str, world: World, work: Path, blocks: Path, stopping: threading.Event
) -> None:
    """Write the world's history as TSDB blocks into ``blocks``, through files in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    blocks.mkdir(parents=True, exist_ok=True)
    source, said = work / "history.om", work / "promtool.log"
    try:
        with source.open("w", encoding="utf-8") as out:
            for piece in world.history():
                if stopping.is_set():
                    raise _Stopping
                out.write(piece)
        # One block for the span: promtool reads the file again for every block it writes.
        command = [promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet"]
        command += ["--max-block-duration=72h", str(source), str(blocks)]
        with said.open("wb") as errors:
            run = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
            )
        try:
            while run.poll() is None:
                if stopping.wait(0.05):
                    raise _Stopping
        finally:
            if run.poll() is None:
                run.kill()
            run.wait()
        if run.returncode != 0:
            last = said.read_text(encoding="utf-8", errors="replace").strip()[-300:]
            raise NotStarted(f"promtool did not write the history: {last}")
    finally:
        source.unlink(missing_ok=True)
        said.unlink(missing_ok=True)


@contextlib.contextmanager
def _exporter(world: World) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering Prometheus's scrapes with the world's values;
    yields its ``host:port``."""
    lock = threading.Lock()  # scrapes carry the sums on one at a time

    class Scrape(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.partition("?")[0] != "/metrics":
                self.send_error(404)
                return
            with lock:
                body = world.exposition(time.time()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no line per scrape

    server = ThreadingHTTPServer(("127.0.0.1", 0), Scrape)
    thread = threading.Thread(target=server.serve_forever, name="demo-metrics", daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextlib.contextmanager
def _alertmanager(
    root: Path, services: list[DemoService], started: float
) -> Iterator[tuple[str, list[str]]]:
    """Alertmanager with an alert firing for each incident; yields its URL and the alerts."""
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if binary is None:
        raise NotStarted("prometheus-alertmanager not installed", installed=False)
    shutil.rmtree(root, ignore_errors=True)  # no silences left from another run
    root.mkdir(parents=True)
    config = root / "alertmanager.yml"
    config.write_text(ALERTMANAGER_CONFIG, encoding="utf-8")
    args = [
        binary,
        f"--config.file={config}",
        f"--storage.path={root / 'data'}",
        "--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # Debian's default would listen on 0.0.0.0:9094
        "--log.level=warn",
    ]
    with _server(args, root / "alertmanager.log") as url:
        alerts = _alerts(services, started)
        try:
            with httpx.Client(timeout=5, trust_env=False) as http:
                answer = http.post(f"{url}/api/v2/alerts", json=alerts)
        except httpx.HTTPError as exc:
            raise NotStarted(f"it took no alerts: {exc}") from None
        if answer.status_code != 200:
            raise NotStarted(f"it took no alerts: HTTP {answer.status_code} {answer.text[:200]}")
        yield url, [a["labels"]["alertname"] for a in alerts]


def _alerts(services: list[DemoService], started: float) -> list[dict[str, Any]]:
    """An alert per incident, as Prometheus would have sent it five minutes in."""
    now = datetime.fromtimestamp(started, UTC)
    found = []
    for service in services:
        incident = service.incident
        if incident is None:
            continue
        found.append(
            {
                "labels": {
                    "alertname": incident.alert,
                    "severity": incident.severity,
                    "service": service.name,
                    "namespace": service.namespace,
                    "deployment": service.name,
                },
                "annotations": {
                    "summary": incident.summary,
                    "description": incident.description,
                    "runbook_url": f"{RUNBOOKS}/{service.name}/{incident.alert}",
                },
                "startsAt": (now - timedelta(seconds=incident.began - 300)).isoformat(),
                "endsAt": (now + FIRING_FOR).isoformat(),
            }
        )
    return found


@contextlib.contextmanager
def _server(args: list[str], log_file: Path) -> Iterator[str]:
    """A server process (``{port}`` in ``args`` becomes a free port on 127.0.0.1), ready;
    yields its URL and stops it on the way out."""
    for _ in range(3):  # a free port may be taken before the server listens on it
        port = _free_port()
        with log_file.open("ab") as out:
            process = subprocess.Popen(
                [a.replace("{port}", str(port)) for a in args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            ready = _ready(process, url)
        except BaseException:
            _stop(process)
            raise
        if ready:
            break
        _stop(process)
    else:
        said = log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        last = said[-1][-300:] if said else "it said nothing"
        raise NotStarted(f"it did not start, see {log_file}: {last}")
    try:
        yield url
    finally:
        _stop(process)


def _ready(process: subprocess.Popen[bytes], url: str) -> bool:
    deadline = time.monotonic() + READY_WITHIN
    with httpx.Client(timeout=1, trust_env=False) as http:  # no proxy for 127.0.0.1
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if http.get(f"{url}/-/ready").status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_WITHIN)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
