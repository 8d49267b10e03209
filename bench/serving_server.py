"""One server of ``bench.serving``: Atrium, or the floor, under uvicorn on a free local port.

``python -m bench.serving_server atrium SETTINGS_JSON`` serves ``create_app(Settings(**json),
plugins=[])``: the catalog alone, as ``bench.run`` measures it, with settings given as
arguments (they beat ``ATRIUM_*`` variables and ``atrium.toml``, so a developer's Redis cannot
slip into a target that must have none). ``python -m bench.serving_server floor BODY_FILE
MEDIA_TYPE`` serves a bare Starlette endpoint answering the file's bytes.

Both run as ``atrium serve`` runs a worker (``atrium.cli.uvicorn_options``): one process, uvloop
and httptools, JSON logs on stderr (Atrium at its ``log_level``, INFO unless the settings say
otherwise, so its access log is written as it is in production; the floor has none). The
socket is bound
to port 0 here and its port printed as the first line on stdout (then stdout goes to stderr);
uvicorn starts listening on it once the app's lifespan has started, so the caller knows the
server is up when ``/healthz`` answers.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from atrium.app import create_app
from atrium.cli import uvicorn_options
from graph.logs import configure_logging
from graph.settings import Settings

__all__ = ["floor_app", "main"]

FLOOR_LOG_LEVEL = "WARNING"


def floor_app(body: bytes, media_type: str) -> Starlette:
    """The same bytes from a plain endpoint: what serving them costs without GraphQL."""

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type=media_type)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[Route("/graphql", endpoint, methods=["GET"]), Route("/healthz", healthz)]
    )


def _app(argv: list[str]) -> tuple[Starlette, str]:
    match argv:
        case ["atrium", settings_json]:
            settings = Settings(**orjson.loads(settings_json))
            return create_app(settings, plugins=[]), settings.log_level
        case ["atrium-with-plugins", settings_json]:  # the bundled plugins, as installed
            settings = Settings(**orjson.loads(settings_json))
            return create_app(settings), settings.log_level
        case ["floor", body_file, media_type]:
            return floor_app(Path(body_file).read_bytes(), media_type), FLOOR_LOG_LEVEL
    raise SystemExit(__doc__)


def main(argv: list[str]) -> None:
    app, log_level = _app(argv)
    configure_logging(log_level)
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it uvicorn's two writes (head, body) meet delayed ACKs: 40 ms per request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    config = uvicorn.Config(app, lifespan="on", **uvicorn_options())
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
