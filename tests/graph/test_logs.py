"""JSON logs written in batches, and the access log's short way to them."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
from collections.abc import Iterator

import orjson
import pytest

from graph import logs
from graph.logs import AccessLog, configure_logging, flush_logs


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """Logging configured as `atrium serve` does, into a string; restored afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logs._sink, logs._handler)
    levels = {n: logging.getLogger(n).level for n in ("pgserver", "uvicorn.error")}
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    try:
        yield out
    finally:
        root.handlers[:], root.level, logs._sink, logs._handler = saved
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        logging.getLogger("uvicorn.access").disabled = False


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


async def test_lines_wait_a_moment_and_go_out_together_in_order(stream: io.StringIO) -> None:
    access = AccessLog()
    logging.getLogger("atrium.test").info("started", extra={"port": 8000})
    access.record("GET", "ComponentPage", 200, 0.00123)
    access.record("POST", None, 400, 0.5)
    assert stream.getvalue() == "", "written at once: one write per line"
    await asyncio.sleep(logs.FLUSH_DELAY * 2)
    first, second, third = lines(stream)
    assert first["message"] == "started" and first["port"] == 8000
    assert second == {
        "time": second["time"],
        "level": "info",
        "logger": "atrium.http",
        "message": "graphql request",
        "method": "GET",
        "operation": "ComponentPage",
        "status": 200,
        "duration_ms": 1.23,
    }
    assert third["operation"] == "anonymous" and third["status"] == 400
    # The short way writes the same time format as the formatter.
    assert (
        len(str(second["time"])) == len(str(first["time"])) == len("2026-01-01T00:00:00.000+00:00")
    )
    assert str(second["time"]) >= str(first["time"])


async def test_warnings_are_written_at_once_after_what_came_before(stream: io.StringIO) -> None:
    AccessLog().record("GET", "Page", 200, 0.001)
    logging.getLogger("atrium.test").warning("Redis is not answering")
    assert [line["message"] for line in lines(stream)] == [
        "graphql request",
        "Redis is not answering",
    ]


def test_without_an_event_loop_lines_are_written_at_once(stream: io.StringIO) -> None:
    done = threading.Event()

    def work() -> None:
        logging.getLogger("atrium.test").info("from a thread")
        done.set()

    threading.Thread(target=work).start()
    assert done.wait(5)
    assert [line["message"] for line in lines(stream)] == ["from a thread"]


async def test_flush_logs_writes_what_waits(stream: io.StringIO) -> None:
    AccessLog().record("GET", "Page", 304, 0.0001)
    flush_logs()
    assert lines(stream)[0]["status"] == 304


def test_libraries_chatter_only_when_debugging(stream: io.StringIO) -> None:
    logging.getLogger("pgserver").info("Running commandline: initdb ...")
    logging.getLogger("pgserver").warning("postgres did not stop")
    flush_logs()
    assert [line["message"] for line in lines(stream)] == ["postgres did not stop"]


async def test_the_access_log_is_an_ordinary_record_elsewhere(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without Atrium's own logging (tests, an application embedding Atrium), access lines
    are records like any other, for whatever handlers there are."""
    with caplog.at_level(logging.INFO, logger="atrium.http"):
        AccessLog().record("GET", "Page", 200, 0.002)
    [record] = [r for r in caplog.records if r.name == "atrium.http"]
    assert record.getMessage() == "graphql request"
    assert record.__dict__["operation"] == "Page" and record.__dict__["status"] == 200
