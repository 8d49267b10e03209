"""What the benchmark's scenarios share, so that a scenario module is mostly its workload.

- ``timing``: percentiles, rounds in an order that rotates, requests per second over rounds
  and its ratio to a floor's in the same rounds, the collector kept out of the timings;
- ``inprocess``: GraphQL requests timed through the ASGI app against a bare endpoint
  answering the same bytes (``Scenario``, ``Measurement``, ``measure``), and ``explain``,
  the statements of a slow one and the plan of the slowest;
- ``database``: a scratch database, dropped at the end whatever happened;
- ``apps``: Atrium's app as scenarios build it, and the floor (Starlette, the same bytes);
- ``process``: a server's process with its log file: started, awaited, stopped;
- ``servers``: an app under uvicorn in a process of its own on a free port (``serve`` is
  that process's side); ``replica``: ``atrium serve`` as production runs it;
  ``haproxy`` in front of them; ``redis``: a redis-server of a scenario's own;
- ``load``: HTTP/1.1 keep-alive load from a process of its own;
- ``tables``: plain-text tables, and targets with their PASS or MISS;
- ``host``: free ports, a process's CPU time and memory, a child's environment.

A scenario that finds something wrong raises ``BenchFailure``: ``python -m bench`` prints it
and exits with status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["BenchFailure", "exit_status"]


class BenchFailure(Exception):
    """The benchmark found something wrong: an error, a wrong answer, a server that failed."""


def exit_status(scenarios: Callable[[], None]) -> int:
    """Run ``scenarios``: 0, or 1 once one failed, the failure printed."""
    try:
        scenarios()
    except BenchFailure as exc:
        print(f"\nbenchmark FAILED: {exc}", file=sys.stderr)
        return 1
    return 0
