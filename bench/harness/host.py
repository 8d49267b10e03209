"""This machine: free local ports, a process's CPU time and memory (Linux's /proc), and the
environment a child process of the benchmark runs in."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

__all__ = ["ROOT", "child_environment", "cpu_seconds", "free_port", "rss"]

ROOT: Final = Path(__file__).resolve().parent.parent.parent  # the checkout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_environment(settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without its ``ATRIUM_`` variables, plus ``settings``; this checkout
    first on the path (bench/ is not installed, and the code measured is the checkout's,
    whatever the editable install last mapped)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env | {"PYTHONPATH": path} | dict(settings or {})


def _cpu(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name, in parentheses, may hold spaces: count fields after its end.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Iterable[int]) -> float | None:
    """User and system CPU seconds of these processes so far; None where there is no /proc."""
    try:
        return sum(_cpu(pid) for pid in pids)
    except OSError:
        return None


def rss(pid: int) -> int | None:
    """The resident set in bytes (VmRSS), None where there is no /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None
