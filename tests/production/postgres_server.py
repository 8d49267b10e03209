"""A throwaway PostgreSQL of a test's own, which the test may stop and start again on the same
port (the shared one on 5432 is everyone's). Built from pgserver's binaries (in the venv).

PostgreSQL refuses to run as root: as root, the server runs as pgserver's own system user
(which pgserver creates for its embedded servers), its data directory owned by that user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    # platformdirs warns when XDG_RUNTIME_DIR is unset (root shells, containers).
    warnings.simplefilter("ignore")
    from pgserver._commands import POSTGRES_BIN_PATH
    from pgserver.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

__all__ = ["PostgresServer", "postgres_server"]

SYSTEM_USER = "pgserver"


@dataclass
class PostgresServer:
    """A server on 127.0.0.1:``port`` with trust authentication for ``postgres``."""

    port: int
    pgdata: Path
    log: Path
    user: str | None  # the system user it runs as (None: this process's)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        self._pg_ctl(
            "-w",
            "-t",
            "30",
            "-o",
            f"-p {self.port} -h 127.0.0.1 -k {self.pgdata}",
            "-l",
            str(self.log),
            "start",
        )

    def stop(self) -> None:
        """A fast shutdown, as a restart or a failover does it: sessions are ended
        ("terminating connection due to administrator command"), then the server exits."""
        self._pg_ctl("-w", "-t", "30", "-m", "fast", "stop")

    def _pg_ctl(self, *args: str) -> None:
        extra: dict[str, Any] = {"user": self.user} if self.user else {}
        subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(self.pgdata), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            **extra,
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """Initialise a cluster in a temporary directory and start it; stopped and deleted after."""
    workdir = Path(tempfile.mkdtemp(prefix="atrium-pg-"))
    pgdata = workdir / "pgdata"
    user = None
    extra: dict[str, Any] = {}
    if os.geteuid() == 0:
        user = SYSTEM_USER
        entry = ensure_user_exists(user)
        assert entry is not None
        ensure_prefix_permissions(workdir)
        workdir.chmod(0o755)
        ensure_folder_permissions(POSTGRES_BIN_PATH, 0o555)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o444)
        pgdata.mkdir(mode=0o700)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
        os.chown(workdir, entry.pw_uid, entry.pw_gid)
        extra = {"user": user}
    subprocess.run(
        [
            str(POSTGRES_BIN_PATH / "initdb"),
            "-D",
            str(pgdata),
            "--auth=trust",
            "--encoding=utf8",
            "-U",
            "postgres",
            "--no-sync",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
        **extra,
    )
    server = PostgresServer(_free_port(), pgdata, workdir / "server.log", user)
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
