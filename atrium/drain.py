"""Stopping a replica without dropping anything: SIGTERM starts a drain.

A load balancer (HAProxy, a Kubernetes Service and its ingress) goes on sending requests to a
replica until its health checks say otherwise; a replica that stops listening at SIGTERM
drops whatever is sent to it meanwhile. So, at SIGTERM, ``atrium serve``:

1. says it is draining: ``/readyz`` answers 503 at once, and every answer carries
   ``Connection: close``, so that keep-alive clients and proxies connect again (elsewhere);
2. goes on serving everything for ``ATRIUM_SHUTDOWN_GRACE`` seconds, while the balancer's
   checks take it out;
3. then stops as uvicorn stops: it listens no more, closes idle keep-alive connections,
   answers the requests it has read, closes websockets with 1012 (Service Restart: clients
   reconnect, to another replica), waits for what is in flight, stops the lifespan (jobs,
   caches, the database pool) and exits 0.

A second SIGTERM, or SIGINT (Ctrl+C) at any time, skips what is left of the grace; a second
Ctrl+C then stops without waiting, as uvicorn does.

uvicorn installs its signal handlers before it loads the app, in every worker's main thread;
``atrium.app.served_app`` (the factory ``atrium serve`` gives uvicorn) has a ``Drain`` take
them over from there, which hands the signal on to them when the grace is over.
``Supervisor`` is uvicorn's supervisor of ``--workers N``, which passes a second SIGTERM on to
the workers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from uvicorn.supervisors import Multiprocess

from graph.services import Services
from graph.types import Message, Send

__all__ = ["Drain", "Supervisor", "closing"]

log = logging.getLogger("atrium.drain")

Handler = Callable[[int, FrameType | None], Any]
_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_CLOSE = (b"connection", b"close")


class Drain:
    """The signals that stop a server, with a grace between SIGTERM and the stop."""

    def __init__(self, services: Services, grace: float) -> None:
        self.services = services
        self.grace = grace
        self._stop: Handler | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopping = False

    def install(self) -> None:
        """Take SIGTERM and SIGINT over from the server's handler, kept to stop it later."""
        stop = signal.getsignal(signal.SIGTERM)
        if not callable(stop) or signal.getsignal(signal.SIGINT) != stop:
            raise RuntimeError("the server's own signal handler must be in place first")
        self._stop = stop
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            # Signal handlers interrupt whatever runs: the decision is the loop's.
            signal.signal(sig, lambda signum, _: loop.call_soon_threadsafe(self.signalled, signum))

    def signalled(self, sig: int) -> None:
        """The first SIGTERM starts the grace; SIGINT, a SIGTERM during the grace or any
        signal once stopping goes to the server's handler at once."""
        if sig == signal.SIGTERM and not self.services.draining and self.grace > 0:
            self.services.draining = True
            log.info("draining: readiness says 503, serving on", extra={"grace_s": self.grace})
            self._timer = asyncio.get_running_loop().call_later(self.grace, self._stop_serving)
            return
        if self._timer is not None:
            self._timer.cancel()
        if not self._stopping:
            log.info("stopping now", extra={"signal": signal.Signals(sig).name})
        self._stopping = True
        self.services.draining = True
        assert self._stop is not None
        self._stop(sig, None)

    def _stop_serving(self) -> None:
        log.info("grace over: stopping")
        self._stopping = True
        assert self._stop is not None
        self._stop(signal.SIGTERM, None)


def closing(send: Send) -> Send:
    """``send``, saying ``Connection: close`` on the response (a draining replica's)."""

    async def closing_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), _CLOSE]}
        await send(message)

    return closing_send


class Supervisor(Multiprocess):
    """uvicorn's supervisor of several workers. At SIGTERM it sends each worker SIGTERM
    (each drains) and waits; a SIGTERM that comes meanwhile is passed on too, so it stops
    them at once. (Ctrl+C reaches the workers from the terminal itself.)"""

    def join_all(self) -> None:
        # No worker starts any more: let the listening socket go, so that it closes with the
        # workers' copies and new connections are refused, not left waiting in its backlog.
        for sock in self.sockets:
            sock.close()
        while any(worker.process.is_alive() for worker in self.processes):
            while self.signal_queue:
                if self.signal_queue.pop(0) == signal.SIGTERM:
                    for worker in self.processes:
                        if worker.process.is_alive() and worker.pid is not None:
                            os.kill(worker.pid, signal.SIGTERM)
            time.sleep(0.1)
        super().join_all()
