"""The Redis every cache of a process shares (the L2 level and the invalidation channel), and
what to do when it stops answering: leave it alone for a few seconds, count the failure, say so
in the log once a minute."""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from loaders.memory import CacheStats

__all__ = ["SharedRedis"]

log = logging.getLogger("atrium.cache")

# After a Redis failure, leave it alone this long rather than slow every request down.
REDIS_PAUSE: Final = 5.0


class SharedRedis:
    """The Redis every cache of a process shares, and what to do when it stops answering:
    leave it alone for a few seconds, count the failure, say so in the log once a minute."""

    def __init__(self, redis: Any, prefix: str, stats: CacheStats) -> None:
        self.redis = redis
        self.prefix = prefix
        self.stats = stats
        self.failures = 0
        self._paused_until = 0.0
        self._last_warning = 0.0

    def usable(self) -> bool:
        return self.redis is not None and time.monotonic() >= self._paused_until

    def failed(self, exc: Exception, cache: str) -> None:
        self.failures += 1
        self.stats.add("l2", "error")
        now = time.monotonic()
        self._paused_until = now + REDIS_PAUSE
        if now - self._last_warning > 60:
            self._last_warning = now
            log.warning(
                "Redis is not answering; serving from the in-process cache and the database",
                extra={"cache": cache, "error": str(exc) or type(exc).__name__},
            )
