"""``atrium schema``, with a third-party plugin pip-installed beside Atrium as its author would:
Atrium's committed schema and tests are unchanged by it, and the plugin's own fragment is
printed and held to Atrium's breaking-change gate (``graph.schema_gate``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from graphql import build_schema, find_breaking_changes, find_dangerous_changes

from graph.assembly import installed_plugins
from graph.schema_file import plugin_schema
from graph.settings import Settings

ROOT = Path(__file__).resolve().parent.parent

# An on-call plugin, in versions: {policy} is the name of a field of its own type, {extra} more
# of its fields, {tiers} its enum's values.
SOURCE = """
from __future__ import annotations

import enum

from graph.plugin import Info, PluginBuilder, strawberry


@strawberry.enum
class Tier(enum.Enum):
{tiers}


@strawberry.type(description="Who answers pages for a component now.")
class OnCall:
    person: str
    {policy}: {policy_type}
    tier: Tier
{extra}


@strawberry.type
class ComponentOnCall:
    @strawberry.field(description="Who is on call for it.")
    def on_call(self) -> OnCall | None:
        return None


@strawberry.type
class OnCallQuery:
    @strawberry.field
    def on_call_rotations(self, info: Info) -> list[OnCall]:
        return []


class OnCallPlugin:
    id = "oncall"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(OnCallQuery)
        builder.extend_type("Component", ComponentOnCall)


plugin = OnCallPlugin()
"""

PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "atrium-oncall"
version = "{version}"
requires-python = ">=3.11"

[project.entry-points."atrium.plugins"]
oncall = "atrium_oncall:plugin"

[tool.setuptools]
py-modules = ["atrium_oncall"]
"""

# The console operation the plugin ships.
OPERATION = """
query EntityOnCall($ref: String!) {
  entity(ref: $ref) {
    ... on Component { onCall { person escalationPolicy tier } }
  }
}
"""

Install = Callable[..., Path]
Printed = subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    """pip-install a version of the plugin (its own package and entry point) into a folder of
    its own, to put on a command's PYTHONPATH."""

    def install(
        version: str,
        *,
        policy: str = "escalation_policy",
        policy_type: str = "str",
        extra: str = "",
        tiers: tuple[str, ...] = ("PRIMARY", "SECONDARY"),
    ) -> Path:
        package = tmp_path_factory.mktemp(f"oncall-{version}")
        (package / "pyproject.toml").write_text(PYPROJECT.format(version=version))
        (package / "atrium_oncall.py").write_text(
            SOURCE.format(
                policy=policy,
                policy_type=policy_type,
                extra=extra,
                tiers="\n".join(f'    {t} = "{t.lower()}"' for t in tiers),
            )
        )
        site = tmp_path_factory.mktemp(f"site-{version}")
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"),
                *("--no-build-isolation", "--target", str(site), str(package)),
            ],
            check=True,
            capture_output=True,
        )
        return site

    return install


@pytest.fixture(scope="module")
def released(install: Install) -> Path:
    return install("1.0.0")


def run(
    *args: str, site: Path, cwd: Path = ROOT, module: str | None = "atrium.cli"
) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    return subprocess.run(
        [sys.executable, *(("-m", module) if module else ()), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**inherited, "PYTHONPATH": str(site)},
        timeout=300,
    )


@pytest.fixture(scope="module")
def served(released: Path) -> Printed:
    """``atrium schema print --installed`` with the release installed, which two tests read."""
    return run("schema", "print", "--installed", site=released)


@pytest.fixture(scope="module")
def fragment(released: Path) -> Printed:
    """``atrium schema print --plugin oncall`` of the release: what its author commits, which
    a test reads and the gate's tests check against (``committed``)."""
    return run("schema", "print", "--plugin", "oncall", site=released)


def test_a_third_party_plugin_leaves_atriums_schema_alone(released: Path, served: Printed) -> None:
    printed = run("schema", "print", site=released)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == (ROOT / "schema.graphql").read_text(encoding="utf-8")
    assert "onCall" not in printed.stdout
    # As served, with every installed plugin, it is there.
    assert served.returncode == 0, served.stderr
    assert "onCall: OnCall" in served.stdout and "onCallRotations: [OnCall!]!" in served.stdout


def test_atriums_own_tests_pass_with_the_plugin_installed(released: Path, tmp_path: Path) -> None:
    tests = [
        "tests/graph/test_plugins.py",
        "tests/graph/test_schema_file.py",
        "tests/graph/test_schema_compat.py",
        "tests/test_cli_plugins.py",
    ]
    # The plugin is there for them to find.
    listed = run(
        "-c",
        "from graph.assembly import installed_plugins as i; print(*(e.name for e in i()))",
        site=released,
        module=None,
    )
    assert "oncall" in listed.stdout.split(), listed.stderr
    result = run(
        *tests,
        *("--basetemp", str(tmp_path / "pytest")),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        "-q",
        site=released,
        module="pytest",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def test_the_plugins_fragment_is_what_it_adds(
    released: Path, fragment: Printed, served: Printed
) -> None:
    assert fragment.returncode == 0, fragment.stderr
    added = fragment.stdout
    assert '"""Who answers pages for a component now."""\ntype OnCall {' in added
    assert "extend type Component {\n" in added and "onCall: OnCall" in added
    assert "extend type Query {\n  onCallRotations: [OnCall!]!\n}" in added
    assert "enum Tier {\n  PRIMARY\n  SECONDARY\n}" in added
    # Nothing of Atrium's own, and it extends Atrium's schema as committed.
    assert "type Component implements" not in added and "ownerRef" not in added
    atrium = (ROOT / "schema.graphql").read_text(encoding="utf-8")
    assert served.returncode == 0, served.stderr
    rebuilt = build_schema(f"{atrium}\n{added}")
    assert not find_breaking_changes(rebuilt, build_schema(served.stdout))
    assert not find_breaking_changes(build_schema(served.stdout), rebuilt)

    missing = run("schema", "print", "--plugin", "pager", site=released)
    assert missing.returncode == 1
    assert "atrium: no installed plugin pager (installed: deployments" in missing.stderr


@pytest.fixture(scope="module")
def committed(fragment: Printed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin's committed fragment and console operation, as of its release."""
    folder = tmp_path_factory.mktemp("oncall-repo")
    assert fragment.returncode == 0, fragment.stderr
    (folder / "schema.graphql").write_text(fragment.stdout, encoding="utf-8")
    (folder / "operations").mkdir()
    (folder / "operations" / "EntityOnCall.graphql").write_text(OPERATION, encoding="utf-8")
    return folder


def check(site: Path, repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run(
        *("schema", "check", "--plugin", "oncall", str(repo / "schema.graphql")),
        *("--operations", str(repo / "operations"), *extra),
        site=site,
    )


def test_the_release_passes_its_own_gate(released: Path, committed: Path) -> None:
    result = check(released, committed)
    assert result.returncode == 0, result.stderr
    assert "plugin oncall: no breaking change" in result.stdout
    assert "1 operations valid" in result.stdout


def test_renaming_a_plugins_field_fails_its_gate(install: Install, committed: Path) -> None:
    renamed = install("2.0.0", policy="escalation")
    result = check(renamed, committed)
    assert result.returncode == 1
    assert (
        "breaking change not acknowledged in --acknowledgements: "
        "FIELD_REMOVED: Field OnCall.escalationPolicy was removed."
    ) in result.stderr
    assert (
        "console operation invalid on the live schema: EntityOnCall "
        "(operations/EntityOnCall.graphql): Cannot query field 'escalationPolicy' on type 'OnCall'."
    ) in result.stderr.replace(str(committed) + "/", "")

    # Acknowledged, the removal passes; the console's operation still does not.
    acks = committed / "schema-changes.md"
    acks.write_text(
        "## Acknowledged\n\n- FIELD_REMOVED: Field OnCall.escalationPolicy was removed. "
        "Reason: renamed escalation, no client read it\n",
        encoding="utf-8",
    )
    result = check(renamed, committed, "--acknowledgements", str(acks))
    assert result.returncode == 1
    assert "breaking change not acknowledged" not in result.stderr
    assert "Cannot query field 'escalationPolicy'" in result.stderr
    acks.unlink()


def test_retyping_a_plugins_field_fails_its_gate(install: Install, committed: Path) -> None:
    retyped = install("2.1.0", policy_type="int")
    result = check(retyped, committed)
    assert result.returncode == 1
    assert (
        "FIELD_CHANGED_KIND: Field OnCall.escalationPolicy changed type from String! to Int!."
    ) in result.stderr


def test_adding_fields_and_values_passes_its_gate(install: Install, committed: Path) -> None:
    grown = install(
        "1.1.0",
        extra="    handover_at: str | None = None",
        tiers=("PRIMARY", "SECONDARY", "SHADOW"),
    )
    result = check(grown, committed)
    assert result.returncode == 0, result.stderr
    assert "plugin oncall: no breaking change" in result.stdout
    # An enum value added is dangerous (a client may not know it): told, allowed.
    assert (
        "dangerous change (allowed): VALUE_ADDED_TO_ENUM: Enum value Tier.SHADOW was added."
        in result.stderr
    )


@pytest.mark.parametrize("plugin_id", ["deployments", "observability", "pincompute"])
def test_a_bundled_plugins_fragment_rebuilds_its_schema(plugin_id: str) -> None:
    found = plugin_schema(Settings(), plugin_id)
    assert plugin_id in [ep.name for ep in installed_plugins(bundled=True)]
    rebuilt = build_schema(f"{found.base_sdl}\n{found.fragment}")
    live = found.live._schema
    for old, new in ((rebuilt, live), (live, rebuilt)):
        assert not find_breaking_changes(old, new) and not find_dangerous_changes(old, new)
    assert "extend type " in found.fragment


def test_a_file_that_is_no_fragment_is_told(released: Path, tmp_path: Path) -> None:
    # Atrium's whole schema given for the plugin's fragment: it cannot extend Atrium's.
    whole = run(
        "schema", "check", "--plugin", "oncall", str(ROOT / "schema.graphql"), site=released
    )
    assert whole.returncode == 1
    assert "schema.graphql does not extend Atrium's schema" in whole.stderr
    assert "There can be only one type named 'API'." in whole.stderr and "more" in whole.stderr
    broken = tmp_path / "broken.graphql"
    broken.write_text("type OnCall {\n  person: String!\n", encoding="utf-8")
    result = run("schema", "check", "--plugin", "oncall", str(broken), site=released)
    assert result.returncode == 1
    assert "Syntax Error" in result.stderr and f"{broken}:3:1" in result.stderr
