"""The build's files under ``/assets/``: those Vite's manifest names (hashed) are immutable,
kept a year; anything else (the persisted-query manifest, the logo) is revalidated. The build
writes each compressible file compressed beside it (``name.br``, ``name.gz``): the one the
browser accepts is sent as it is. Vite's own manifest and the server's files (dot folders) are
not served."""

from __future__ import annotations

import os
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from ssr.compress import negotiate

__all__ = ["BuildFiles"]

_SUFFIXES = {"br": ".br", "gzip": ".gz"}


class BuildFiles(StaticFiles):
    def __init__(self, directory: Path) -> None:
        # check_dir=False: the build may appear after start-up (make web while serving).
        super().__init__(directory=directory, check_dir=False)

    async def get_response(self, path: str, scope: Scope) -> Response:
        if any(part.startswith(".") for part in Path(path).parts) or path.endswith(
            tuple(_SUFFIXES.values())
        ):
            raise HTTPException(404)
        response = await super().get_response(path, scope)
        if response.status_code == 200:
            response = self._compressed(path, scope, response)
            console = scope["app"].state.services.console
            hashed = console is not None and path in console.vite.files
            response.headers["cache-control"] = (
                "public, max-age=31536000, immutable" if hashed else "no-cache"
            )
            response.headers["x-content-type-options"] = "nosniff"
            response.headers["vary"] = "Accept-Encoding"
        return response

    def _compressed(self, path: str, scope: Scope, response: Response) -> Response:
        """The file as the browser accepts it, when the build compressed it."""
        if not isinstance(response, FileResponse):
            return response
        accepted = dict(scope["headers"]).get(b"accept-encoding", b"").decode("latin-1")
        encoding = negotiate(accepted, size=1 << 30)
        if encoding == "identity":
            return response
        compressed = f"{response.path}{_SUFFIXES[encoding]}"
        try:
            stat = os.stat(compressed)
        except OSError:
            return response
        found = FileResponse(
            compressed,
            stat_result=stat,
            media_type=response.media_type,
            headers={"content-encoding": encoding},
        )
        return found
