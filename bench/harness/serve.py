"""A server of the benchmark, in the process ``Servers.start`` starts:
``python -m bench.harness.serve MODULE:FACTORY ARGS...``.

The factory, a function of the scenario's own module, takes ``ARGS`` (strings) and returns the
ASGI app and its log level. This module runs it as ``atrium serve`` runs a worker
(``uvicorn_options``): one process, uvloop and httptools, JSON logs on stderr (Atrium at the
level its settings say, INFO unless told otherwise, so its access log is written as in
production). The socket is bound to port 0 here and its port printed as the first line on
stdout, then stdout goes to stderr; uvicorn listens on it once the app's lifespan has
started, so the server is up when ``/healthz`` answers.

Factories every scenario can use are here: Atrium with settings given as JSON (they beat
``ATRIUM_*`` variables and ``atrium.toml``, so a developer's Redis cannot slip into a target
that must have none), with no plugin but the core's or with the installed ones, and the floor
answering a file's bytes.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import orjson
import uvicorn

from bench.harness.apps import atrium, floor_app, listening_socket, uvicorn_options
from graph.logs import configure_logging
from graph.settings import Settings

__all__ = ["Factory", "atrium_alone", "atrium_with_plugins", "floor", "main", "name_of"]

Factory = Callable[..., tuple[Any, str]]  # (the ASGI app, its log level)
FLOOR_LOG_LEVEL: Final = "WARNING"


def name_of(factory: Factory) -> str:
    """``module:function``, as this module's command line takes it."""
    return f"{factory.__module__}:{factory.__qualname__}"


def atrium_alone(settings_json: str) -> tuple[Any, str]:
    """Atrium with the core's plugins alone: the catalog, as the in-process scenarios run it."""
    settings = Settings(**orjson.loads(settings_json))
    return atrium(settings), settings.log_level


def atrium_with_plugins(settings_json: str) -> tuple[Any, str]:
    """Atrium with the bundled plugins, as installed."""
    settings = Settings(**orjson.loads(settings_json))
    return atrium(settings, None), settings.log_level


def floor(body_file: str, media_type: str) -> tuple[Any, str]:
    """The floor answering a GET of /graphql with the file's bytes."""
    return floor_app(Path(body_file).read_bytes(), media_type), FLOOR_LOG_LEVEL


def main(argv: list[str]) -> None:
    if not argv or ":" not in argv[0]:
        raise SystemExit(__doc__)
    module, _, name = argv[0].partition(":")
    factory: Factory = getattr(importlib.import_module(module), name)
    app, log_level = factory(*argv[1:])
    configure_logging(log_level)
    sock = listening_socket("127.0.0.1", 0)
    print(sock.getsockname()[1], flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    config = uvicorn.Config(app, lifespan="on", **uvicorn_options())
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
