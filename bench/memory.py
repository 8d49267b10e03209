"""Peak memory of one step, two ways: Python's own allocations and the process's resident set.

tracemalloc counts every Python allocation in every thread (the LDAP reader runs in threads)
but not what C libraries or the allocator keep; it also slows allocation-heavy code and its
own bookkeeping takes memory, so a traced step is neither timed nor RSS-measured: callers run
it apart.

The resident set's peak is a high-water mark. getrusage's ru_maxrss cannot be used on Linux
for a child process: exec carries the parent's peak over into it (the LDAP scenario's child
would start at the catalog scenarios' peak), and nothing resets that. The
kernel's own mark for the address space, VmHWM in /proc/self/status, starts afresh and can be
reset (``5`` into /proc/self/clear_refs), so on Linux the growth is the step's own peak over its
start. Elsewhere it falls back to ru_maxrss, which only shows growth above any earlier peak,
and ``reset`` says so.
"""

from __future__ import annotations

import contextlib
import gc
import resource
import sys
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Peak", "python_peak", "rss_peak"]

_CLEAR_REFS: Final = Path("/proc/self/clear_refs")
_STATUS: Final = Path("/proc/self/status")


@dataclass(slots=True)
class Peak:
    bytes: int = 0
    reset: bool = True  # False: an RSS growth above an earlier, unrelated peak only


def _high_water_mark() -> int | None:
    """VmHWM in bytes, after resetting it to the current resident set; None where unsupported."""
    try:
        _CLEAR_REFS.write_text("5")
        return _vm_hwm()
    except (OSError, ValueError):
        return None


def _vm_hwm() -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise ValueError("no VmHWM in /proc/self/status")


def _max_rss() -> int:
    """ru_maxrss in bytes: Linux reports kilobytes, macOS bytes."""
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(value if sys.platform == "darwin" else value * 1024)


@contextlib.contextmanager
def rss_peak() -> Iterator[Peak]:
    """How far the process's resident set rose above its level at the start of the block."""
    gc.collect()
    start = _high_water_mark()
    peak = Peak(reset=start is not None)
    before = _max_rss() if start is None else start
    try:
        yield peak
    finally:
        after = _max_rss() if start is None else _vm_hwm()
        peak.bytes = max(0, after - before)


@contextlib.contextmanager
def python_peak() -> Iterator[Peak]:
    """The most memory Python allocations held at once during the block, over its start."""
    gc.collect()
    tracemalloc.start()
    peak = Peak()
    try:
        yield peak
    finally:
        _, peak.bytes = tracemalloc.get_traced_memory()
        tracemalloc.stop()
