"""Prometheus's HTTP API, as the plugin reads it: range queries with a bounded timeout, errors
as ``Unavailable`` naming the backend, and PromQL built from templates with escaped values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from string import Template
from typing import Any

import httpx

__all__ = ["PromQLError", "Prometheus", "Series", "Unavailable", "escape_label", "render"]


class Unavailable(Exception):
    """The backend failed, was slow, or is not configured; the message says which and why."""

    def __init__(self, backend: str, message: str) -> None:
        super().__init__(f"{backend}: {message}")
        self.backend = backend


class PromQLError(ValueError):
    """A template Prometheus refuses (reported once, at start-up)."""


@dataclass(frozen=True, slots=True)
class Series:
    labels: dict[str, str]
    points: list[tuple[float, float | None]]  # None where Prometheus said NaN


def escape_label(value: str) -> str:
    """A PromQL double-quoted string's content: backslash, quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(template: str, **values: str) -> str:
    """A template with ``$name`` placeholders filled with escaped label values."""
    return Template(template).substitute({k: escape_label(v) for k, v in values.items()})


def _number(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) or math.isinf(value) else value


class Prometheus:
    def __init__(self, url: str, http: httpx.AsyncClient, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.http = http
        self.timeout = timeout

    async def query_range(self, query: str, start: float, end: float, step: float) -> list[Series]:
        try:
            answer = await self.http.get(
                f"{self.url}/api/v1/query_range",
                params={"query": query, "start": start, "end": end, "step": step},
                timeout=self.timeout,
            )
        except httpx.TimeoutException:
            raise Unavailable("prometheus", f"no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise Unavailable("prometheus", f"cannot reach it: {exc}") from None
        body = _json(answer)
        if answer.status_code == 400 and body.get("errorType") == "bad_data":
            raise PromQLError(str(body.get("error")))
        if answer.status_code != 200 or body.get("status") != "success":
            why = body.get("error") or f"HTTP {answer.status_code}"
            raise Unavailable("prometheus", str(why)[:500])
        data = body.get("data") or {}
        return [
            Series(
                labels=dict(item.get("metric") or {}),
                points=[(float(t), _number(v)) for t, v in item.get("values") or []],
            )
            for item in data.get("result") or []
        ]

    async def check(self, query: str) -> None:
        """Raise PromQLError when Prometheus cannot parse ``query`` (an instant query)."""
        try:
            answer = await self.http.get(
                f"{self.url}/api/v1/query", params={"query": query}, timeout=self.timeout
            )
        except httpx.HTTPError as exc:
            raise Unavailable("prometheus", f"cannot reach it: {exc}") from None
        body = _json(answer)
        if answer.status_code == 400 and body.get("errorType") == "bad_data":
            raise PromQLError(str(body.get("error")))


def _json(answer: httpx.Response) -> dict[str, Any]:
    try:
        found = answer.json()
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
