"""The webhook receivers: ``POST /hooks/deployments/github`` and ``POST /hooks/deployments``.

Checked in this order, and nothing is stored unless every check passes: the body's size (413
over ``ATRIUM_DEPLOYMENTS_MAX_BODY``), its signature (401: HMAC-SHA256 of the raw body with the
source's secret, ``sha256=<hex>`` in ``X-Hub-Signature-256`` / ``X-Atrium-Signature-256``), the
delivery id and event name (400), the body itself (400, saying what is wrong). GitHub's
``ping`` is answered 200; events other than ``deployment`` and ``deployment_status`` are
answered 200 and ignored, so GitHub shows the delivery as successful.

Answers are JSON: ``{"outcome": "applied" | "unchanged" | "duplicate" | "waiting", ...}``;
``waiting`` (202) means the component is not in the catalog yet: the event is kept and applied
when it appears.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any, Final
from urllib.parse import parse_qs

import orjson
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graph.plugin import app_services
from plugins.deployments.events import BadEvent
from plugins.deployments.service import PLUGIN_ID, Deployments, sign

__all__ = ["atrium_hook", "github_hook"]

GITHUB_EVENTS: Final = frozenset({"deployment", "deployment_status"})
_DELIVERY_MAX: Final = 200

log = logging.getLogger("atrium.deployments")


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


class _TooLarge(Exception):
    pass


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _receive(
    request: Request,
    *,
    source: str,
    secret: SecretStr | None,
    signature_header: str,
    delivery_header: str,
    event_header: str,
) -> Response:
    services = app_services(request)
    deployments: Deployments | None = services.extras.get(PLUGIN_ID)
    if deployments is None:
        return _error(503, "the deployments plugin has not started")
    settings = deployments.settings
    try:
        body = await _body(request, settings.deployments_max_body)
    except _TooLarge:
        return _error(413, f"the body is over {settings.deployments_max_body} bytes")
    if secret is None:
        return _error(401, f"no secret is configured for {source} webhooks: nothing is accepted")
    given = request.headers.get(signature_header, "")
    if not given or not hmac.compare_digest(given, sign(secret.get_secret_value(), body)):
        return _error(401, f"{signature_header} is missing or does not match the body")
    event = request.headers.get(event_header, "")
    if source == "github" and event == "ping":
        return JSONResponse({"outcome": "pong"})
    if source == "github" and event not in GITHUB_EVENTS:
        return JSONResponse({"outcome": "ignored", "event": event[:100]})
    delivery = request.headers.get(delivery_header, "").strip()
    if not delivery or len(delivery) > _DELIVERY_MAX:
        return _error(400, f"{delivery_header} is required (at most {_DELIVERY_MAX} characters)")
    try:
        parsed = _parse(body, request.headers.get("content-type", ""))
        result = await deployments.ingest(source, delivery, event or "deploy", body, parsed)
    except BadEvent as exc:
        return _error(400, f"not a {source} deployment event: {exc}")
    log.info(
        "deployment event",
        extra={"source": source, "delivery": delivery, "outcome": result.outcome},
    )
    answer: dict[str, Any] = {"outcome": result.outcome}
    if result.component_ref is not None:
        answer |= {"component": result.component_ref, "deploy": result.deploy_id}
        answer["state"] = result.state
    return JSONResponse(answer, status_code=202 if result.outcome == "waiting" else 200)


def _parse(body: bytes, content_type: str) -> Any:
    """JSON, or GitHub's form encoding (``payload=<json>``) when the hook is set up so."""
    if content_type.startswith("application/x-www-form-urlencoded"):
        try:
            fields = parse_qs(body.decode("ascii"), strict_parsing=True)
        except (UnicodeDecodeError, ValueError):
            raise BadEvent("the form body cannot be read") from None
        if len(fields.get("payload", [])) != 1:
            raise BadEvent("the form body has no payload field")
        body = fields["payload"][0].encode()
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadEvent(f"the body is not JSON ({exc})") from None
    if _has_nul(parsed):
        raise BadEvent("strings must not contain NUL characters")
    return parsed


def _has_nul(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if depth > 64:
        raise BadEvent("the body is nested too deep")
    if isinstance(value, dict):
        return any(_has_nul(k, depth) or _has_nul(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v, depth + 1) for v in value)
    return False


async def github_hook(request: Request) -> Response:
    deployments: Deployments | None = app_services(request).extras.get(PLUGIN_ID)
    secret = deployments.settings.deployments_github_secret if deployments else None
    return await _receive(
        request,
        source="github",
        secret=secret,
        signature_header="X-Hub-Signature-256",
        delivery_header="X-GitHub-Delivery",
        event_header="X-GitHub-Event",
    )


async def atrium_hook(request: Request) -> Response:
    deployments: Deployments | None = app_services(request).extras.get(PLUGIN_ID)
    secret = deployments.settings.deployments_webhook_secret if deployments else None
    return await _receive(
        request,
        source="webhook",
        secret=secret,
        signature_header="X-Atrium-Signature-256",
        delivery_header="X-Atrium-Delivery",
        event_header="X-Atrium-Event",
    )
