"""deploy/: every Kubernetes manifest as the API server would read it (built strictly into the
client's models), and what the manifests, the Dockerfile and Atrium's settings must agree on:
ports, probes, the drain's grace, selectors, the migrations Job, the pods' lock-down, every
ATRIUM_ variable. The image's build itself is tested by test_deploy_image.py."""

from __future__ import annotations

import copy
import fnmatch
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from graph.plugin_settings import PluginSettings, read_plugin_settings
from tests.conftest import ROOT
from tests.production import dockerfile
from tests.production.deploy_manifests import (
    SECRET_EXAMPLE,
    Invalid,
    atrium_settings,
    kustomization,
    manifest_files,
    manifests,
    settings_classes,
    the,
    to_model,
)

PLACEHOLDER = "changeme"


def container(kind: str) -> Any:
    [only] = the(kind).model.spec.template.spec.containers
    return only


def pod_labels(kind: str) -> dict[str, str]:
    labels: dict[str, str] = the(kind).model.spec.template.metadata.labels
    return labels


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def settings_from(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> list[Any]:
    """Every settings class of Atrium (the core's first) read from these variables alone, as
    a pod reads them."""
    monkeypatch.chdir(tmp_path)  # no atrium.toml
    for name in [n for n in os.environ if n.startswith("ATRIUM_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return [
        read_plugin_settings(cls.__module__, cls, file=tmp_path / "atrium.toml")[0]
        if issubclass(cls, PluginSettings)
        else cls()
        for cls in settings_classes()
    ]


def configured() -> dict[str, str]:
    """What the ConfigMap and the Secret's example give a pod together."""
    data = the("ConfigMap").model.data or {}
    secret = the("Secret").model.string_data or {}
    return {**data, **secret}


def filled() -> dict[str, str]:
    """The same with the Secret's placeholders replaced, as an operator does."""
    return {k: v.replace(PLACEHOLDER, "s3cr3t-from-the-vault") for k, v in configured().items()}


@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: p.name)
def test_every_manifest_is_read_as_written_by_its_model(path: Path) -> None:
    found = [m for m in manifests() if m.path == path]
    assert found, f"{path.name} holds no document"
    for manifest in found:
        model = manifest.model
        assert model.metadata.name and model.metadata.labels["app.kubernetes.io/name"] == "atrium"


def test_a_misspelt_or_mistyped_field_is_caught() -> None:
    """The strict reading is what makes the test above worth anything."""
    document = the("Deployment").document
    misspelt = copy.deepcopy(document)
    spec = misspelt["spec"]["template"]["spec"]["containers"][0]
    spec["readynessProbe"] = spec.pop("readinessProbe")
    with pytest.raises(Invalid, match="V1Container has no field readynessProbe"):
        to_model(misspelt, "misspelt")
    mistyped = copy.deepcopy(document)
    mistyped["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "8000"
    with pytest.raises(Invalid, match="containerPort: int expected"):
        to_model(mistyped, "mistyped")
    nameless = copy.deepcopy(document)
    del nameless["spec"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(Invalid, match="name"):
        to_model(nameless, "nameless")
    with pytest.raises(Invalid, match="serves no Deployment"):
        to_model({**document, "apiVersion": "batch/v1"}, "wrong group")


def test_the_kustomization_applies_every_manifest_but_the_secret_example() -> None:
    listed = kustomization()["resources"]
    assert sorted(listed) == sorted(p.name for p in manifest_files() if p != SECRET_EXAMPLE), (
        "deploy/kubernetes and kustomization.yaml's resources differ"
    )
    assert kustomization()["namespace"]
    # One image for the replicas and the Job, which kustomization.yaml's images: names.
    [image] = kustomization()["images"]
    assert container("Deployment").image == container("Job").image == image["name"]
    assert image["newName"] and image["newTag"]


def test_ports_probes_and_the_command_agree_with_the_image() -> None:
    runtime = dockerfile.stages()["runtime"]
    server = container("Deployment")
    [port] = server.ports
    command = runtime.exec_form("ENTRYPOINT") + server.args
    assert command[:2] == ["atrium", "serve"]
    assert command[command.index("--port") + 1] == str(port.container_port)
    assert command[command.index("--host") + 1] == "0.0.0.0"
    # The image alone serves the same way, on the port it exposes.
    image_command = runtime.exec_form("ENTRYPOINT") + runtime.exec_form("CMD")
    assert image_command == command
    assert runtime.last("EXPOSE") == str(port.container_port)
    [service_port] = the("Service").model.spec.ports
    assert service_port.port == 80
    assert service_port.target_port in (port.name, port.container_port)
    for probe, path in [
        (server.startup_probe, "/readyz"),
        (server.readiness_probe, "/readyz"),
        (server.liveness_probe, "/healthz"),
    ]:
        assert probe.http_get.path == path
        assert probe.http_get.port in (port.name, port.container_port)
    assert server.readiness_probe.failure_threshold == 1  # out at the drain's first 503


def test_kubernetes_waits_longer_than_the_drain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    [core, *_] = settings_from(filled(), monkeypatch, tmp_path)
    pod = the("Deployment").model.spec.template.spec
    # Past the grace, in-flight requests and websockets still need time to finish.
    assert pod.termination_grace_period_seconds >= core.shutdown_grace + 10
    # Atrium drains by itself: a preStop sleep would only delay that.
    assert container("Deployment").lifecycle is None


def test_a_rollout_and_a_disruption_keep_capacity() -> None:
    deployment = the("Deployment").model
    assert deployment.spec.strategy.rolling_update.max_unavailable == 0
    assert deployment.spec.strategy.rolling_update.max_surge == 1
    # The autoscaler owns the replica count; a count here would be reset by each apply.
    assert deployment.spec.replicas is None
    hpa = the("HorizontalPodAutoscaler").model.spec
    assert hpa.min_replicas >= 3 and hpa.max_replicas > hpa.min_replicas
    assert [m.resource.name for m in hpa.metrics] == ["cpu"]
    pdb = the("PodDisruptionBudget").model.spec
    assert pdb.max_unavailable == 1 and pdb.min_available is None


def test_everything_selects_the_replicas_and_nothing_the_migrations() -> None:
    deployment = the("Deployment").model
    labels, job_labels = pod_labels("Deployment"), pod_labels("Job")
    selectors = {
        "Deployment": deployment.spec.selector.match_labels,
        "Service": the("Service").model.spec.selector,
        "PodDisruptionBudget": the("PodDisruptionBudget").model.spec.selector.match_labels,
        **{
            f"spread by {c.topology_key}": c.label_selector.match_labels
            for c in deployment.spec.template.spec.topology_spread_constraints
        },
    }
    for what, selector in selectors.items():
        assert selects(selector, labels), f"{what} does not select the replicas"
        assert not selects(selector, job_labels), f"{what} selects the migrations Job's pod"
    target = the("HorizontalPodAutoscaler").model.spec.scale_target_ref
    assert (target.api_version, target.kind, target.name) == (
        "apps/v1",
        "Deployment",
        deployment.metadata.name,
    )


def test_the_migrations_job_runs_atrium_migrate_as_the_replicas_run() -> None:
    runtime = dockerfile.stages()["runtime"]
    job, server = container("Job"), container("Deployment")
    assert runtime.exec_form("ENTRYPOINT") + job.args == ["atrium", "migrate"]
    assert job.command is None and server.command is None
    assert job.image == server.image
    assert job.env_from == server.env_from and job.env == server.env
    job_pod = the("Job").model.spec.template.spec
    server_pod = the("Deployment").model.spec.template.spec
    assert job_pod.restart_policy == "Never"
    assert job_pod.service_account_name == server_pod.service_account_name
    assert job_pod.security_context == server_pod.security_context
    # What is applied before the rollout holds the Job and all it needs, and no replica.
    before = {
        (m.kind, m.name)
        for m in manifests()
        if (m.document["metadata"].get("labels") or {}).get("atrium.dev/apply") == "before-rollout"
    }
    needs = {("Job", the("Job").name), ("ServiceAccount", job_pod.service_account_name)}
    needs |= {("ConfigMap", s.config_map_ref.name) for s in job.env_from if s.config_map_ref}
    assert before == needs


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_run_locked_down(kind: str) -> None:
    runtime = dockerfile.stages()["runtime"]
    uid, _, gid = runtime.last("USER").partition(":")
    assert uid.isdigit() and int(uid) > 0, "the image's USER must be a numeric uid, not root"
    pod = the(kind).model.spec.template.spec
    assert pod.security_context.run_as_non_root is True
    assert (pod.security_context.run_as_user, pod.security_context.run_as_group) == (
        int(uid),
        int(gid),
    )
    assert pod.security_context.seccomp_profile.type == "RuntimeDefault"
    assert pod.automount_service_account_token is False
    assert the("ServiceAccount").model.automount_service_account_token is False
    [box] = pod.containers
    assert box.security_context.allow_privilege_escalation is False
    assert box.security_context.read_only_root_filesystem is True
    assert box.security_context.capabilities.drop == ["ALL"]
    # The read-only root leaves /tmp writable, for temporary files.
    volumes = {v.name: v for v in pod.volumes}
    [tmp] = [m for m in box.volume_mounts if m.mount_path == "/tmp"]
    assert volumes[tmp.name].empty_dir is not None
    for resource in ("cpu", "memory"):
        assert box.resources.requests[resource] and box.resources.limits[resource]


def test_every_atrium_variable_named_in_deploy_is_a_setting() -> None:
    """Names in the manifests (comments too), the Dockerfile and the scripts: a misspelt
    variable is silently ignored by Atrium, so it must fail here."""
    known = atrium_settings()
    files = [p for p in (ROOT / "deploy").rglob("*") if p.is_file()]
    named = {
        (name, path.name)
        for path in files
        for name in re.findall(r"ATRIUM_[A-Z0-9_]*[A-Z0-9]", path.read_text())
    }
    assert len(named) > 20
    unknown = sorted(f"{name} ({where})" for name, where in named if name not in known)
    assert not unknown, f"not settings of Atrium: {unknown}"
    # Everything the ConfigMap and Secret hold reaches the pods as a variable (envFrom).
    not_settings = sorted(set(configured()) - set(known))
    assert not not_settings, not_settings


def test_the_configmap_and_secret_give_production_what_it_needs() -> None:
    known = atrium_settings()
    data = the("ConfigMap").model.data
    secret = the("Secret").model.string_data
    assert not set(data) & set(secret), "set twice: which one wins depends on envFrom's order"
    needed = {
        "ATRIUM_MODE",
        "ATRIUM_DATABASE_URL",
        "ATRIUM_REDIS_URL",
        "ATRIUM_PUBLIC_URL",
        "ATRIUM_OIDC_ISSUER",
        "ATRIUM_OIDC_CLIENT_ID",
        "ATRIUM_OIDC_CLIENT_SECRET",
    }
    assert needed <= set(data) | set(secret), needed - set(data) - set(secret)
    # Secrets (as Atrium types them), and the database URL with its password, only in the
    # Secret; no URL with a password in the ConfigMap.
    secrets = {name for name, setting in known.items() if setting.secret}
    assert not secrets & set(data), secrets & set(data)
    assert "ATRIUM_DATABASE_URL" in secret
    assert not [v for v in data.values() if re.search(r"://[^/@\s]*:[^/@\s]*@", v)]


def test_the_settings_validate_once_the_placeholders_are_replaced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = the("Secret").model.string_data
    assert all(PLACEHOLDER in value for value in secret.values()), "mark every secret"
    # As is, production refuses to start (the example's LDAP password, at least).
    with pytest.raises(ValidationError, match="placeholder"):
        settings_from(configured(), monkeypatch, tmp_path)
    [core, *_] = settings_from(filled(), monkeypatch, tmp_path)
    assert core.production and core.database_pooling == "transaction"
    assert core.oidc_client_secret.get_secret_value() == "s3cr3t-from-the-vault"
    assert core.trusted_proxies == []  # nobody named by a header: people sign in


def test_the_dockerfile_builds_with_the_deploy_scripts() -> None:
    stages = dockerfile.stages()
    assert list(stages) == ["console", "wheel", "runtime"]
    steps = {name: dockerfile.build_step(stage) for name, stage in stages.items()}
    assert {name: script for name, (script, _) in steps.items()} == {
        "console": "deploy/build-console.sh",
        "wheel": "deploy/build-wheel.sh",
        "runtime": "deploy/install-wheel.sh",
    }
    assert {p.name for p in (ROOT / "deploy").glob("*.sh")} == {
        Path(script).name for script, _ in steps.values()
    }
    runtime = stages["runtime"]
    # The runtime's Python is the one pyproject.toml asks for, and the wheel is built on it.
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    minor = re.fullmatch(r">=\s*(3\.\d+)", wanted)
    assert minor, wanted
    assert runtime.base.startswith(f"python:{minor.group(1)}-slim")
    assert stages["wheel"].base == runtime.base
    # The console's build is where ATRIUM_WEB_DIR says.
    [console_copy] = [c for c in runtime.copies() if c.stage == "console"]
    assert console_copy.sources == [f"{stages['console'].workdir()}/web/dist/"]
    assert runtime.env()["ATRIUM_WEB_DIR"] == console_copy.dest.rstrip("/")
    assert runtime.env()["ATRIUM_MODE"] == "production"


def test_the_wheel_stage_copies_every_package_pyproject_names() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    tops = {pattern.rstrip("*").rstrip(".") for pattern in included}
    copied = {s.strip("/") for c in dockerfile.stages()["wheel"].copies() for s in c.sources}
    assert tops <= copied, tops - copied
    assert {"pyproject.toml", "README.md"} <= copied  # the README is the package's readme


def test_the_benchmark_and_the_tests_are_not_packaged() -> None:
    """bench/ and tests/ run from a checkout: neither pyproject.toml nor the image's wheel
    stage takes them (test_deploy_image checks the wheel built from what it copies)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    for package in ("bench", "bench.harness", "tests", "tests.production"):
        assert not [p for p in included if fnmatch.fnmatchcase(package, p)], package
    copied = {s.strip("/") for c in dockerfile.stages()["wheel"].copies() for s in c.sources}
    assert not copied & {"bench", "tests"}
    assert not [f for f in dockerfile.context_files(".") if f.startswith("bench/")]


def test_the_build_context_holds_what_the_copies_take_and_little_else() -> None:
    context = dockerfile.context_files(".")
    assert not [f for f in context if re.match(r"(\.git|\.venv|\.atrium|tests)/", f)]
    assert not [f for f in context if "node_modules/" in f or "__pycache__" in f]
    assert not [f for f in context if f.startswith(("web/dist/", "web/dist-kit/"))]
    size = sum((ROOT / f).stat().st_size for f in context)
    assert size < 20 * 2**20, f"the build context is {size / 2**20:.1f} MiB"
    for stage in dockerfile.stages().values():
        for step in stage.copies():
            for source in [] if step.stage else step.sources:
                assert dockerfile.context_files(source), f"COPY {source}: not in the context"
