"""The build's files under ``/assets/``: those Vite's manifest names (hashed) are immutable,
kept a year; anything else (the persisted-query manifest) is revalidated. Vite's own manifest
is not served."""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["BuildFiles"]


class BuildFiles(StaticFiles):
    def __init__(self, directory: Path) -> None:
        # check_dir=False: the build may appear after start-up (make web while serving).
        super().__init__(directory=directory, check_dir=False)

    async def get_response(self, path: str, scope: Scope) -> Response:
        if any(part.startswith(".") for part in Path(path).parts):
            raise HTTPException(404)
        response = await super().get_response(path, scope)
        if response.status_code == 200:
            console = scope["app"].state.services.console
            hashed = console is not None and path in console.vite.files
            response.headers["cache-control"] = (
                "public, max-age=31536000, immutable" if hashed else "no-cache"
            )
            response.headers["x-content-type-options"] = "nosniff"
        return response
