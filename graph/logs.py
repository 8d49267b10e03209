"""Structured logs: one JSON object per line, with whatever ``extra`` the caller gave.

``configure_logging`` sends every record to a ``JsonSink``: lines are gathered in memory and
written at most ``FLUSH_DELAY`` seconds later (at once for warnings and errors, and on exit), so
that a busy server makes one write(2) per tenth of a second instead of one per request.

The access log (one line per GraphQL request) skips the logging module's per-record work
(a LogRecord, the caller's frame, a formatter): ``access_log`` writes its line straight to the
sink when one is configured and the ``atrium.http`` logger is enabled for INFO; anywhere else
(tests, an embedding application with its own logging) it is an ordinary INFO record.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import sys
import threading
import time
from datetime import UTC, datetime
from typing import IO, Any, Final

import orjson

__all__ = ["AccessLog", "JsonFormatter", "JsonSink", "configure_logging", "flush_logs"]

FLUSH_DELAY: Final = 0.1  # seconds a line may wait in memory
_FLUSH_BYTES: Final = 64 * 1024

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class JsonSink:
    """Lines on their way to a stream, written in batches. Threads may log too (work handed
    to ``asyncio.to_thread``): a lock keeps the batch whole."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._lines: list[str] = []
        self._size = 0
        self._lock = threading.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def write(self, line: str, *, urgent: bool = False) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # no event loop here (a thread, the CLI): nothing would flush later
            loop = None
        with self._lock:
            self._lines.append(line)
            self._size += len(line)
            if not urgent and self._size < _FLUSH_BYTES and loop is not None:
                if self._timer is None:
                    self._timer = loop.call_later(FLUSH_DELAY, self.flush)
                    self._timer_loop = loop
                    return
                if self._timer_loop is loop:
                    return  # a flush is due soon
                # One is due on a loop that has ended, or is another thread's: flush now.
        self.flush()

    def flush(self) -> None:
        with self._lock:
            timer, self._timer, self._timer_loop = self._timer, None, None
            text = "\n".join(self._lines) + "\n" if self._lines else ""
            self._lines.clear()
            self._size = 0
        if timer is not None:
            with contextlib.suppress(RuntimeError):
                timer.cancel()
        if not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: lose the lines, not the app
            pass


class _SinkHandler(logging.Handler):
    def __init__(self, sink: JsonSink) -> None:
        super().__init__()
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.sink.write(line, urgent=record.levelno >= logging.WARNING)

    def flush(self) -> None:
        self.sink.flush()


_sink: JsonSink | None = None
_handler: logging.Handler | None = None


def configure_logging(level: str = "INFO", stream: IO[str] | None = None) -> None:
    global _sink, _handler
    if _sink is not None:
        _sink.flush()
    _sink = JsonSink(stream or sys.stderr)
    _handler = _SinkHandler(_sink)
    _handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [_handler]
    root.setLevel(level.upper())
    # Atrium logs each request itself, with its GraphQL operation.
    logging.getLogger("uvicorn.access").disabled = True
    # Libraries' step-by-step chatter (the embedded PostgreSQL's initdb output, uvicorn's
    # start-up banner, httpx's line per request) only when debugging; their warnings and
    # errors always.
    chatty = logging.INFO if root.level <= logging.DEBUG else logging.WARNING
    for name in ("pgserver", "uvicorn.error", "httpx"):
        logging.getLogger(name).setLevel(chatty)
    atexit.register(_sink.flush)


def flush_logs() -> None:
    if _sink is not None:
        _sink.flush()


class AccessLog:
    """One line per GraphQL request: method, operation, status, duration."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("atrium.http")
        # The second the cached start of a line is for, and that start ('{"time":"...SS.').
        self._second = -1
        self._head = ""
        # What follows the milliseconds, by (method, operation, status): the line's fixed
        # part, written once as JSON, up to the duration's value.
        self._tails: dict[tuple[str, str | None, int], str] = {}
        # Durations as written, by hundredths of a millisecond: a float's repr is most of a
        # line's cost, and requests take the same few durations over and over.
        self._durations: dict[int, str] = {}

    def record(self, method: str, operation: str | None, status: int, seconds: float) -> None:
        self.record_many(method, status, [(operation, time.time(), seconds)])

    def record_many(
        self, method: str, status: int, requests: list[tuple[str | None, float, float]]
    ) -> None:
        """Lines for requests answered alike: (operation, when (wall clock), seconds) each."""
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        sink, handlers = _sink, logging.root.handlers
        # The short way only when records would reach our sink alone, unfiltered.
        if sink is None or logger.handlers or len(handlers) != 1 or handlers[0] is not _handler:
            for operation, _, seconds in requests:
                logger.info(
                    "graphql request",
                    extra={
                        "method": method,
                        "operation": operation or "anonymous",
                        "status": status,
                        "duration_ms": round(seconds * 1000, 2),
                    },
                )
            return
        lines = []
        durations = self._durations
        for operation, at, seconds in requests:
            second = int(at)
            if second != self._second:
                self._second = second
                self._head = '{"time":"' + _timestamp(second)[:-9]  # "YYYY-MM-DDTHH:MM:SS."
            key = (method, operation, status)
            tail = self._tails.get(key)
            if tail is None:
                tail = self._tail(key)
            hundredths = int(seconds * 100_000 + 0.5)
            duration = durations.get(hundredths)
            if duration is None:
                duration = repr(hundredths / 100)  # the float round(ms, 2) gives
                if len(durations) < 10_000:
                    durations[hundredths] = duration
            millis = int((at - second) * 1000)
            lines.append(f"{self._head}{millis:03d}{tail}{duration}}}")
        if lines:
            sink.write("\n".join(lines))

    def _tail(self, key: tuple[str, str | None, int]) -> str:
        """A line after its milliseconds, up to its duration's value."""
        method, operation, status = key
        middle = orjson.dumps(
            {
                "level": "info",
                "logger": "atrium.http",
                "message": "graphql request",
                "method": method,
                "operation": operation or "anonymous",
                "status": status,
            }
        ).decode()[1:-1]
        tail = f'+00:00",{middle},"duration_ms":'
        if len(self._tails) < 4096:  # operation names come from clients
            self._tails[key] = tail
        return tail
