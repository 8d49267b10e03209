"""Telling a database out of reach from a statement's own error.

Out of reach: a connection refused, lost or never answered (TimeoutError is an OSError), a
statement cancelled (its timeout), a server starting up, shutting down or out of connection
slots, a pooler that cannot reach its server (SQLSTATE class 08). ``InterfaceError`` counts
only when it says the connection is closed; otherwise it is a misuse of asyncpg, a bug to
report as such.
"""

from __future__ import annotations

import logging

import asyncpg

__all__ = ["MAYBE_LOST", "is_lost", "quiet_pool_maintenance", "reason"]

_UNREACHABLE: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.PostgresConnectionError,  # class 08, PgBouncer's "server login has been failing"
    asyncpg.CannotConnectNowError,  # starting up, shutting down, in recovery
    asyncpg.AdminShutdownError,  # "terminating connection due to administrator command"
    asyncpg.CrashShutdownError,
    asyncpg.TooManyConnectionsError,
    asyncpg.QueryCanceledError,  # statement_timeout: no answer in time
)
# What to catch, then ask ``is_lost``.
MAYBE_LOST: tuple[type[BaseException], ...] = (*_UNREACHABLE, asyncpg.InterfaceError)


def is_lost(exc: BaseException) -> bool:
    if isinstance(exc, asyncpg.InterfaceError):
        return "closed" in str(exc) or "closing" in str(exc)
    return isinstance(exc, _UNREACHABLE)


def reason(exc: BaseException) -> str:
    """Why, in words a client may read (no address, no internals)."""
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, asyncpg.PostgresError) and not isinstance(
        exc, asyncpg.ConnectionDoesNotExistError
    ):
        return str(exc.args[0]) if exc.args else "refused"
    return "connection lost"


class _OneLineWhenLost(logging.Filter):
    """asyncpg's pool reconnects in the background to keep its minimum size, and logs each
    failed attempt with a traceback: while the database is away, one line each is enough."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None and is_lost(record.exc_info[1]):
            record.msg = f"{record.msg}: {record.exc_info[1]}"
            record.exc_info = None
        return True


def quiet_pool_maintenance() -> None:
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, _OneLineWhenLost) for f in pool_log.filters):
        pool_log.addFilter(_OneLineWhenLost())
