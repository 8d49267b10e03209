"""Atrium's test kit (atrium.testing), as a plugin author uses it.

- A plugin package made here (its own pyproject.toml, entry point, migration, a query field, a
  field on Component, an owners-only mutation) with its own tests using only the kit's
  fixtures and checks, no conftest.py, is pip-installed into a folder and its tests run with
  pytest in a subprocess from the package's folder, where Atrium's ``tests`` cannot be
  imported: they pass.
- In this suite (which loads the kit too): a plugin whose resolvers raise on hostile strings,
  at the root and on Component, is reported by ``check_hostile_inputs``, naming both fields;
  the kit's counters and ``as_user`` with groups, through ``atrium_app``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from atrium.testing import (
    AtriumClient,
    GraphQLErrors,
    HostileInputFailures,
    check_hostile_inputs,
    check_plan_equivalence,
)
from graph.plugin import EntityParent, Parent, PluginBuilder, strawberry

AtriumApp = Callable[..., Awaitable[AtriumClient]]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "atrium-kitprobe"
version = "0.1.0"

[project.entry-points."atrium.plugins"]
kitprobe = "atrium_kitprobe:plugin"

[tool.setuptools]
packages = ["atrium_kitprobe"]

[tool.setuptools.package-data]
atrium_kitprobe = ["migrations/*.sql"]

[tool.pytest.ini_options]
testpaths = ["plugin_tests"]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
asyncio_default_test_loop_scope = "function"
atrium_plugins = ["kitprobe"]
"""

SOURCE = '''\
"""Notes on components, kept in a table of the plugin's own."""

from __future__ import annotations

from pathlib import Path

from graph.plugin import (
    Authorize,
    EntityOwner,
    EntityParent,
    Info,
    Parent,
    PluginBuilder,
    UserError,
    normalize_ref,
    InvalidRef,
    strawberry,
)


async def _note(info: Info, ref: str) -> str | None:
    return await info.context.db.fetchval("select note from kitprobe_notes where ref = $1", ref)


@strawberry.type
class KitQuery:
    @strawberry.field
    async def kit_note(self, info: Info, ref: str) -> str | None:
        try:
            return await _note(info, normalize_ref(ref))
        except InvalidRef as exc:
            raise UserError(str(exc)) from None


@strawberry.type
class KitMutation:
    @strawberry.mutation(extensions=[Authorize(EntityOwner("ref"), "kitprobe.setNote")])
    async def set_kit_note(self, info: Info, ref: str, note: str) -> str:
        if "\\x00" in note or len(note) > 1000:
            raise UserError("a note is up to 1000 characters, without NUL")
        await info.context.db.execute(
            "insert into kitprobe_notes values ($1, $2) on conflict (ref) do update"
            " set note = excluded.note",
            normalize_ref(ref),
            note,
        )
        return note


@strawberry.type
class ComponentNote:
    @strawberry.field
    async def kit_note(self, parent: Parent[EntityParent], info: Info, prefix: str = "") -> str:
        return prefix + ((await _note(info, parent.ref)) or "none")


class KitProbe:
    id = "kitprobe"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(KitQuery)
        builder.mutation(KitMutation)
        builder.extend_type("Component", ComponentNote)
        builder.migrations(Path(__file__).parent / "migrations")


plugin = KitProbe()
'''

MIGRATION = "create table kitprobe_notes (ref text primary key, note text not null);\n"

PLUGIN_TESTS = '''\
"""The plugin's own tests: the kit's fixtures and checks, and nothing of Atrium's tests."""

import importlib.util

import asyncpg
import pytest
import redis.asyncio

from atrium.testing import (
    GraphQLErrors,
    check_hostile_inputs,
    check_plan_equivalence,
    plugin_queries,
)

CATALOG = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: pager}
spec: {type: service, lifecycle: production, owner: oncall-team}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: siren}
spec: {type: service, lifecycle: production, owner: oncall-team}
"""
SET = "mutation($ref: String!, $note: String!) { setKitNote(ref: $ref, note: $note) }"
READ = """query Note($ref: String!) {
  kitNote(ref: $ref)
  entity(ref: $ref) { ref ... on Component { kitNote(prefix: "> ") } }
}"""
VALUES = {"ref": "component:default/pager"}


def test_atriums_own_tests_are_not_importable():
    assert importlib.util.find_spec("tests") is None


async def test_databases_and_redis(atrium_database_url, atrium_redis_url):
    conn = await asyncpg.connect(atrium_database_url)
    try:
        tables = await conn.fetchval("select count(*) from pg_tables where tablename = 'entities'")
    finally:
        await conn.close()
    assert tables == 1
    client = redis.asyncio.from_url(atrium_redis_url)
    try:
        assert await client.ping()
    finally:
        await client.aclose()


async def test_the_plugin_with_its_migration(atrium_app):
    client = await atrium_app()
    assert client.services.assembly.plugin_ids[-1] == "kitprobe"
    await client.load_catalog(CATALOG)
    body = await client.gql(READ, VALUES)
    assert body["data"] == {
        "kitNote": None,
        "entity": {"ref": "component:default/pager", "kitNote": "> none"},
    }


async def test_only_owners_set_notes(atrium_app):
    client = await atrium_app()
    await client.load_catalog(CATALOG)
    with pytest.raises(GraphQLErrors) as refused:
        await client.as_user("bob").gql(SET, {**VALUES, "note": "paged"})
    assert refused.value.errors[0]["extensions"]["code"] == "FORBIDDEN"
    owner = client.as_user("ann", groups=["oncall-team"])
    assert (await owner.gql(SET, {**VALUES, "note": "paged"}))["data"] == {"setKitNote": "paged"}
    body = await client.gql(READ, VALUES)
    assert body["data"]["entity"]["kitNote"] == "> paged"


async def test_statements_and_plan_runs(atrium_app):
    client = await atrium_app()
    await client.load_catalog(CATALOG)
    with client.statements() as statements:
        await client.gql(READ, VALUES)
    assert statements.count >= 2
    with client.plan_runs() as runs:
        for ref in ("component:default/pager", "component:default/siren", "component:nope"):
            answer = await client.persisted_get(READ, {"ref": ref})
            assert answer.status_code == 200, answer.text
    # Registered (automatic persisted queries) and run once on the generic executor, which
    # plans it; then on its plan.
    assert runs.reasons == {"first_run": 1} and runs.generic == 1 and runs.compiled >= 2


async def test_hostile_inputs(atrium_app):
    client = await atrium_app()
    await client.load_catalog(CATALOG)
    assert await check_hostile_inputs(client, "kitprobe", values=VALUES) > 100


async def test_plan_equivalence(atrium_app):
    client = await atrium_app()
    await client.load_catalog(CATALOG)
    queries = plugin_queries(client, "kitprobe", VALUES)
    assert len(queries) == 2
    assert await check_plan_equivalence(client, [*queries, (READ, VALUES)]) == 3
'''


def _environment(site: Path) -> dict[str, str]:
    """The caller's environment but Atrium's settings (the kit's own ATRIUM_TEST_* kept), the
    plugin's site folder as the only extra path."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ATRIUM_") or k.startswith("ATRIUM_TEST_")
    }
    return {**inherited, "PYTHONPATH": str(site)}


def _make_package(root: Path) -> Path:
    package = root / "atrium-kitprobe"
    (package / "atrium_kitprobe" / "migrations").mkdir(parents=True)
    (package / "pyproject.toml").write_text(PYPROJECT)
    (package / "atrium_kitprobe" / "__init__.py").write_text(SOURCE)
    (package / "atrium_kitprobe" / "migrations" / "0001_notes.sql").write_text(MIGRATION)
    (package / "plugin_tests").mkdir()
    (package / "plugin_tests" / "test_kitprobe.py").write_text(PLUGIN_TESTS)
    return package


def test_a_plugin_package_tests_itself_with_the_kit_alone(tmp_path: Path) -> None:
    package = _make_package(tmp_path)
    site = tmp_path / "site"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"),
            *("--no-build-isolation", "--target", str(site), str(package)),
        ],
        check=True,
        capture_output=True,
    )
    env = _environment(site)
    found = subprocess.run(
        [sys.executable, "-c", "import tests"],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
    )
    assert found.returncode != 0 and "No module named 'tests'" in found.stderr, found
    ran = subprocess.run(
        # A temporary root of its own: a session that starts makes pytest's shared one
        # private again, under the feet of embedded databases other tests run.
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"),
            *("--basetemp", str(package.parent / "pytest")),
        ],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-3000:]
    assert "7 passed" in ran.stdout, ran.stdout[-3000:]
    assert not list(package.glob("conftest.py")) and not list(package.rglob("conftest.py"))


# -- a plugin whose resolvers break on hostile strings ------------------------------------------


def _fragile(text: str) -> str:
    if "../" in text:
        raise ValueError("a path climbs out")  # a bug: not a UserError
    return text[:10]


@strawberry.type
class FragileQuery:
    @strawberry.field
    def fragile_echo(self, text: str) -> str:
        return _fragile(text)

    @strawberry.field
    def sturdy_echo(self, text: str) -> str:
        return text[:10]


@strawberry.type
class FragileComponent:
    @strawberry.field
    def fragile_label(self, parent: Parent[EntityParent], suffix: str) -> str:
        return parent.name + _fragile(suffix)


class FragilePlugin:
    id = "fragile"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(FragileQuery)
        builder.extend_type("Component", FragileComponent)


COMPONENT = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: pager}
spec: {type: service, lifecycle: production, owner: oncall-team}
"""


async def test_hostile_input_check_reports_a_resolver_that_breaks(atrium_app: AtriumApp) -> None:
    client = await atrium_app(plugins=[FragilePlugin()])
    await client.load_catalog(COMPONENT)
    with pytest.raises(HostileInputFailures) as failed:
        await check_hostile_inputs(client, "fragile", values={"ref": "component:pager"})
    failures = failed.value.failures
    # Two hostile strings climb paths; each is sent as nobody and as an admin.
    assert {f.split(" ")[0] for f in failures} == {"Query.fragileEcho", "Component.fragileLabel"}
    assert len(failures) == 2 * 2 * 2
    assert all("INTERNAL_SERVER_ERROR" in f for f in failures), failures
    # What breaks is told; the rest was sent all the same.
    assert failed.value.sent > len(failures) * 10


async def test_the_kits_client(atrium_app: AtriumApp) -> None:
    client = await atrium_app(plugins=[FragilePlugin()])
    await client.load_catalog(COMPONENT)
    query = 'query Label { entity(ref: "component:pager") { ... on Component { fragileLabel(suffix: "!") } } }'
    with pytest.raises(GraphQLErrors):
        await client.gql('{ fragileEcho(text: "a/../b") }')
    assert await check_plan_equivalence(client, [query]) == 1
    # Not an admin, then one through the admins' group (made for the occasion).
    stranger = client.as_user("user:default/zoe")
    admin = client.as_user("zoe", groups=["group:default/admins"])
    viewer = "{ viewer { ref isAdmin } }"
    assert (await stranger.gql(viewer))["data"]["viewer"]["isAdmin"] is False
    assert (await admin.gql(viewer))["data"]["viewer"] == {
        "ref": "user:default/zoe",
        "isAdmin": True,
    }
    with client.plan_runs() as runs, client.statements() as statements:
        await client.gql(viewer)
    assert runs.generic == 1 and runs.reasons == {"not_persisted": 1}
    assert statements.count == 0  # nobody asks: nothing to look up
    with pytest.raises(ValueError, match="default namespace"):
        client.as_user("user:ops/zoe")


def test_the_kit_is_installed_as_a_pytest_plugin(pytestconfig: pytest.Config) -> None:
    plugin = pytestconfig.pluginmanager.get_plugin("atrium")
    assert plugin is not None and plugin.__name__ == "atrium.testing.pytest_plugin"


def test_importing_the_kit_imports_nothing_heavy(tmp_path: Path) -> None:
    """The kit is loaded by every pytest run where Atrium is installed: it must cost nothing."""
    code = (
        "import sys, atrium.testing, atrium.testing.pytest_plugin\n"
        "heavy = {'graph', 'sources', 'asyncpg', 'httpx', 'strawberry', 'playwright', 'atrium.app'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert ran.stdout.strip() == "[]", ran.stdout
