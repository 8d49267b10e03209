"""A redis-server of a scenario's own on a free port, so that its command counts are Atrium's
alone; stopped on the way out."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import redis.asyncio as aioredis

from bench.harness import BenchFailure
from bench.harness.host import free_port
from bench.harness.process import spawn

__all__ = ["redis_server"]

START_TIMEOUT_S: Final = 10.0


@contextlib.asynccontextmanager
async def redis_server() -> AsyncIterator[str]:
    """Its URL, once it answers a PING; nothing saved to disk."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise BenchFailure("no redis-server (make system-test-deps installs it)")
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    with tempfile.TemporaryDirectory(prefix="atrium-bench-redis-") as tmp:
        child = await spawn("redis-server", argv, Path(tmp, "redis.log"), cwd=Path(tmp))
        client = aioredis.Redis(port=port)
        try:

            async def pong() -> bool:
                try:
                    return bool(await client.ping())
                except aioredis.ConnectionError:
                    return False

            await child.until(pong, START_TIMEOUT_S, "answering")
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            await client.aclose()
            await child.stop(10.0)
