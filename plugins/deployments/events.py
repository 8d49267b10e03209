"""Webhook bodies read into ``Incoming`` events: GitHub's, and Atrium's own JSON.

GitHub (``deployment`` and ``deployment_status`` events): the repository's ``full_name`` names
the component (its ``github.com/project-slug`` annotation), the deployment's ``environment`` is
the stage, its ``sha`` the release's commit, and the release's version is
``deployment.payload.version`` when the workflow set one, else the deployment's ``ref``. The
deployment's ``payload`` may also carry ``commit_time``, ``artifact`` (or ``image``) and
``build_url``, which GitHub itself does not know. Statuses map onto states:

    queued, pending → pending      in_progress → in_progress      success → succeeded
    failure, error → failed        inactive → cancelled while in flight (GitHub marks a
                                   finished deploy inactive when a newer one replaces it:
                                   that changes nothing)

Atrium's own JSON, for any other CD system (``POST /hooks/deployments``)::

    {"component": "component:default/shipping-service", "stage": "production",
     "deploy": {"id": "argo-4711", "state": "in_progress", "actor": "argo-cd",
                "url": "https://...", "at": "2026-11-23T10:00:00Z", "rollback": false},
     "release": {"version": "1.4.2", "commitSha": "9f2c...", "commitTime": "...",
                 "artifact": "registry.example/shipping@sha256:...", "buildUrl": "https://...",
                 "createdBy": "jenkins"}}

``deploy.state`` is one of ``pending``, ``in_progress``, ``succeeded``, ``failed``,
``cancelled``; ``deploy.id`` is the sender's id of the deploy (a deploy Atrium asked for
carries the id Atrium sent, ``atrium-<n>``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plugins.deployments.model import Incoming, IncomingRelease

__all__ = ["BadEvent", "from_atrium", "from_github"]

GITHUB_STATES: Final = {
    "queued": "pending",
    "pending": "pending",
    "in_progress": "in_progress",
    "success": "succeeded",
    "failure": "failed",
    "error": "failed",
    "inactive": "cancelled",
}
_TEXT: Final = 1000  # longest free text kept from an event (descriptions, URLs)


class BadEvent(ValueError):
    """The body is not an event this endpoint understands; the message says what is wrong."""


def _when(value: Any, what: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadEvent(f"{what} must be a date-time string")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadEvent(f"{what} is not an ISO 8601 date-time: {value[:40]!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _text(value: Any, limit: int = _TEXT) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str | int | float):
        return None
    return str(value)[:limit].replace("\x00", "")


def _object(parent: dict[str, Any], key: str, what: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise BadEvent(f"{what} has no {key} object")
    return value


def from_github(event: str, body: Any) -> Incoming:
    """A GitHub ``deployment`` or ``deployment_status`` event body as an ``Incoming`` event."""
    if not isinstance(body, dict):
        raise BadEvent("the body is not a JSON object")
    deployment = _object(body, "deployment", f"the {event} event")
    repository = _object(body, "repository", f"the {event} event")
    full_name = _text(repository.get("full_name"), 200)
    if full_name is None:
        raise BadEvent("repository.full_name is missing")
    deployment_id = deployment.get("id")
    if not isinstance(deployment_id, int | str) or deployment_id == "":
        raise BadEvent("deployment.id is missing")
    environment = _text(deployment.get("environment"), 100)
    sha = _text(deployment.get("sha"), 64)
    if environment is None or sha is None:
        raise BadEvent("deployment.environment and deployment.sha are required")
    payload = deployment.get("payload")
    if not isinstance(payload, dict):
        payload = {}  # GitHub sends a string when the payload was set as one
    version = _text(payload.get("version"), 200) or _text(deployment.get("ref"), 200) or sha
    creator = deployment.get("creator") or {}
    started = _when(deployment.get("created_at"), "deployment.created_at")
    release = IncomingRelease(
        version=version,
        commit_sha=sha,
        commit_time=_when(payload.get("commit_time"), "deployment.payload.commit_time"),
        artifact=_text(payload.get("artifact") or payload.get("image")),
        created_by=_text(creator.get("login") if isinstance(creator, dict) else None, 200),
        build_url=_text(payload.get("build_url")),
    )
    repository_url = _text(repository.get("html_url"))
    if event == "deployment":
        return Incoming(
            source="github",
            external_id=str(deployment_id),
            subject=full_name,
            stage=environment,
            release=release,
            state=None,
            at=started or datetime.now(UTC),
            started_at=started,
            actor=release.created_by,
            url=f"{repository_url}/deployments" if repository_url else None,
            is_rollback=bool(payload.get("rollback")),
            message=_text(deployment.get("description")),
        )
    status = _object(body, "deployment_status", "the deployment_status event")
    state = GITHUB_STATES.get(str(status.get("state")))
    if state is None:
        raise BadEvent(
            f"deployment_status.state {str(status.get('state'))[:40]!r} is not one of GitHub's"
        )
    status_creator = status.get("creator") or {}
    return Incoming(
        source="github",
        external_id=str(deployment_id),
        subject=full_name,
        stage=environment,
        release=release,
        state=state,
        at=_when(status.get("created_at"), "deployment_status.created_at") or datetime.now(UTC),
        started_at=started,
        actor=release.created_by
        or _text(status_creator.get("login") if isinstance(status_creator, dict) else None, 200),
        url=_text(status.get("log_url"))
        or _text(status.get("target_url"))
        or (f"{repository_url}/deployments" if repository_url else None),
        is_rollback=bool(payload.get("rollback")),
        message=_text(status.get("description")),
    )


class _Release(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    version: str = Field(min_length=1, max_length=200)
    commit_sha: str | None = Field(default=None, alias="commitSha", max_length=64)
    commit_time: datetime | None = Field(default=None, alias="commitTime")
    artifact: str | None = Field(default=None, max_length=_TEXT)
    build_url: str | None = Field(default=None, alias="buildUrl", max_length=_TEXT)
    created_by: str | None = Field(default=None, alias="createdBy", max_length=200)


class _Deploy(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=200)
    state: str = Field(pattern="^(pending|in_progress|succeeded|failed|cancelled)$")
    actor: str | None = Field(default=None, max_length=200)
    url: str | None = Field(default=None, max_length=_TEXT)
    at: datetime | None = None
    started_at: datetime | None = Field(default=None, alias="startedAt")
    rollback: bool = False
    message: str | None = Field(default=None, max_length=_TEXT)


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")

    component: str = Field(min_length=1, max_length=300)
    stage: str = Field(min_length=1, max_length=100)
    deploy: _Deploy
    release: _Release


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def from_atrium(body: Any) -> Incoming:
    """Atrium's own event JSON (module docstring) as an ``Incoming`` event."""
    try:
        event = _Event.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise BadEvent(problems) from None
    release = event.release
    deploy = event.deploy
    return Incoming(
        source="webhook",
        external_id=deploy.id,
        subject=event.component.strip().lower(),
        stage=event.stage,
        release=IncomingRelease(
            version=release.version,
            commit_sha=release.commit_sha,
            commit_time=_aware(release.commit_time),
            artifact=release.artifact,
            created_by=release.created_by,
            build_url=release.build_url,
        ),
        state=deploy.state,
        at=_aware(deploy.at) or datetime.now(UTC),
        started_at=_aware(deploy.started_at),
        actor=deploy.actor,
        url=deploy.url,
        is_rollback=deploy.rollback,
        message=deploy.message,
    )
