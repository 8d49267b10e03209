"""Debian's PgBouncer in transaction pooling mode, in front of the tests' PostgreSQL.

PgBouncer refuses to run as root: as root it is started with ``-u nobody``, its files in a
directory that user can read. ``default_pool_size`` is small on purpose, so that the
transactions of many clients really share a few server connections (a client's next statement
usually lands on another server connection than its last), which is what breaks code that
keeps state in a session.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["PgBouncer", "pgbouncer"]

POOL_SIZE = 3
STARTS_WITHIN = 10.0  # seconds


@dataclass(frozen=True)
class PgBouncer:
    host: str
    port: int
    log: Path

    def url(self, server_url: str) -> str:
        """``server_url`` (a database on the PostgreSQL behind it) as reached through PgBouncer."""
        parts = urlsplit(server_url)
        user = parts.username or "postgres"
        database = parts.path.lstrip("/") or "postgres"
        return f"postgresql://{user}@{self.host}:{self.port}/{database}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _server(server_url: str) -> tuple[str, int, str]:
    """Host (or socket directory), port and user of the PostgreSQL behind."""
    parts = urlsplit(server_url)
    query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
    host = unquote(query.get("host", "")) or parts.hostname or "127.0.0.1"
    return host, parts.port or 5432, parts.username or "postgres"


@contextmanager
def pgbouncer(server_url: str, *, pool_size: int = POOL_SIZE) -> Iterator[PgBouncer]:
    """PgBouncer on a free port of 127.0.0.1 in front of ``server_url``'s server, every database
    of it reachable by name; stopped on the way out."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    host, server_port, user = _server(server_url)
    port = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="atrium-pgbouncer-"))
    workdir.chmod(0o755)  # read by "nobody" when started as root
    auth_file = workdir / "users.txt"
    auth_file.write_text(f'"{user}" ""\n')
    ini = workdir / "pgbouncer.ini"
    ini.write_text(
        "[databases]\n"
        f"* = host={host} port={server_port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {auth_file}\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\n"
        "max_client_conn = 1000\n"
        "max_db_connections = 0\n"
        # Databases come and go with the tests: no server connection is kept for long.
        "server_idle_timeout = 5\n"
        "server_login_retry = 1\n"
        "log_connections = 0\n"
        "log_disconnections = 0\n"
    )
    for path in (auth_file, ini):
        path.chmod(0o644)
    log = workdir / "pgbouncer.log"
    command = [binary, str(ini)]
    if os.geteuid() == 0:
        command[1:1] = ["-u", "nobody"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTS_WITHIN
        while not _answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pgbouncer did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.02)
        yield PgBouncer("127.0.0.1", port, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)
