"""The house's layout stays as the README draws it (Architecture).

The import graph of the installed packages (those pyproject.toml's package discovery finds),
and of the benchmark's (run from a checkout), is read with ``ast``: every import statement counts, inside functions and ``if TYPE_CHECKING:``
too, relative ones resolved. ``import a.b`` imports the module ``a.b``; ``from a import b``
imports ``a`` (the names come from its namespace, so a package's ``__init__`` counts), and
``a.b`` too when that is a module. Then:

- the packages are layered, lowest first ``sources``, ``loaders``, ``resolvers``, ``graph``,
  ``ssr``, ``atrium``, and none imports one above it (nor a plugin: plugins are found by
  their entry points);
- a plugin imports, of Atrium, only the plugin API (``graph.plugin``), besides its own
  package; ``migrations`` imports nothing;
- no module imports itself through others (no cycle), the benchmark's included;
- no module is over ``MAX_LINES`` lines, but those ``LONG_MODULES`` names, each with why; the
  benchmark's included;
- no installed module draws from the ``random`` module's shared generator (its state belongs to
  the application: Hypothesis, running in a thread beside a served app, fails a test whose
  strategy saw it move).
"""

from __future__ import annotations

import ast
import tomllib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import setuptools

ROOT = Path(__file__).resolve().parent.parent

# Lowest first: a package may import those before it, never one after it.
LAYERS = ("sources", "loaders", "resolvers", "graph", "ssr", "atrium")
PLUGINS = "plugins"
PLUGIN_API = "graph.plugin"
MIGRATIONS = "migrations"
# Run from a checkout, not installed, and outside the layers: the benchmark drives the whole
# app from outside, as tests do. Its modules are held to no cycle and to MAX_LINES all the same.
OUTSIDE = {"bench"}

MAX_LINES = 400
# Modules allowed over MAX_LINES, by path, and why. Keep it short: split along a seam instead.
LONG_MODULES = {
    "graph/plugin.py": "the plugin API is one module by design, the whole surface a plugin "
    "imports; its docstring and __all__ are a fifth of it",
    "graph/catalog/types.py": "the Entity interface and one GraphQL type per kind, which "
    "name each other in their fields' annotations (Strawberry resolves them in the module "
    "that defines them), with the parts the kinds share and the reads of their relations",
    "plugins/observability/demo.py": "the demo's Prometheus and Alertmanager, filled, started "
    "and stopped: one job, just over",
}


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool

    @property
    def top(self) -> str:
        return self.name.partition(".")[0]


@cache
def modules() -> dict[str, Module]:
    """Every module of the installed packages and of those ``OUTSIDE``, by dotted name."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    include = [*include, *(f"{top}{tail}" for top in OUTSIDE for tail in ("", ".*"))]
    found: dict[str, Module] = {}
    for package in setuptools.find_packages(str(ROOT), include=include):
        for path in sorted((ROOT / package.replace(".", "/")).glob("*.py")):
            if path.stem == "__init__":
                found[package] = Module(package, path, True)
            else:
                name = f"{package}.{path.stem}"
                found[name] = Module(name, path, False)
    return found


def _known(name: str) -> str | None:
    """The module an imported name is, or the closest package of ours above it."""
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: Module) -> Iterator[tuple[str, int]]:
    """The names a module imports, each with the line it does it on."""
    tree = ast.parse(module.path.read_text(), str(module.path))
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            yield source, node.lineno
            for alias in node.names:
                yield f"{source}.{alias.name}", node.lineno


@cache
def imports() -> dict[str, dict[str, int]]:
    """module → {module of ours it imports: the first line that does}."""
    graph: dict[str, dict[str, int]] = {}
    for name, module in modules().items():
        edges: dict[str, int] = {}
        for imported, line in _imported(module):
            target = _known(imported)
            if target is not None and target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def _where(name: str, line: int) -> str:
    return f"{modules()[name].path.relative_to(ROOT)}:{line}"


def test_every_installed_package_has_its_place() -> None:
    tops = {name.partition(".")[0] for name in modules()}
    placed = {*LAYERS, PLUGINS, MIGRATIONS, *OUTSIDE}
    assert tops <= placed, f"place these packages in tests/test_layering.py: {tops - placed}"


def test_no_package_imports_one_above_it() -> None:
    wrong = []
    for name, edges in imports().items():
        top = name.partition(".")[0]
        if top not in LAYERS:
            continue
        for target, line in edges.items():
            other = target.partition(".")[0]
            if other not in LAYERS or LAYERS.index(other) > LAYERS.index(top):
                wrong.append(f"{_where(name, line)}: {name} imports {target}")
    assert not wrong, (
        "imports go one way, " + " → ".join(reversed(LAYERS)) + ":\n" + "\n".join(wrong)
    )


def test_plugins_import_only_the_plugin_api_and_their_own_package() -> None:
    wrong = []
    for name, edges in imports().items():
        if name.partition(".")[0] != PLUGINS:
            continue
        own = ".".join(name.split(".")[:2]) if name != PLUGINS else None
        for target, line in edges.items():
            if target == PLUGIN_API:
                continue
            if own is not None and (target == own or target.startswith(own + ".")):
                continue
            wrong.append(f"{_where(name, line)}: {name} imports {target}")
    assert not wrong, f"plugins see Atrium through {PLUGIN_API} alone:\n" + "\n".join(wrong)


def test_migrations_import_nothing() -> None:
    for name, module in modules().items():
        if module.top == MIGRATIONS:
            assert not list(_imported(module)), f"{name} imports something"


def test_no_module_imports_itself_through_others() -> None:
    graph = {
        name: {t: n for t, n in edges.items() if t in imports()}
        for name, edges in imports().items()
    }
    cycles = [_cycle(graph, component) for component in _strongly_connected(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in sorted(cycles))


def test_no_module_is_too_long() -> None:
    lengths = {
        str(m.path.relative_to(ROOT)): len(m.path.read_text().splitlines())
        for m in modules().values()
    }
    too_long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    unexplained = sorted(
        f"{path}: {n} lines" for path, n in too_long.items() if path not in LONG_MODULES
    )
    assert not unexplained, (
        f"modules over {MAX_LINES} lines (split them along a seam):\n" + "\n".join(unexplained)
    )
    stale = sorted(path for path in LONG_MODULES if path not in too_long)
    assert not stale, f"no longer over {MAX_LINES} lines, drop from LONG_MODULES: {stale}"


def _strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm, without recursion: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def _cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """One shortest cycle through a component's first module, as the modules it passes."""
    members = set(component)
    start = min(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(graph[node]):
            if target not in members:
                continue
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if target not in came_from:
                came_from[target] = node
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")  # a component always has one


# The ``random`` module's functions that draw from (or reseed) its shared generator.
_SHARED_RANDOM = {
    "betavariate",
    "choice",
    "choices",
    "expovariate",
    "gauss",
    "getrandbits",
    "randbytes",
    "randint",
    "random",
    "randrange",
    "sample",
    "seed",
    "setstate",
    "shuffle",
    "uniform",
}


def test_no_installed_module_draws_from_the_shared_random_generator() -> None:
    wrong = []
    for name, module in modules().items():
        if module.top in OUTSIDE:
            continue
        tree = ast.parse(module.path.read_text(), str(module.path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "random":
                taken = {alias.name for alias in node.names} & _SHARED_RANDOM
                wrong += [f"{_where(name, node.lineno)} imports random.{n}" for n in taken]
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "random"
                and node.attr in _SHARED_RANDOM
            ):
                wrong.append(f"{_where(name, node.lineno)} uses random.{node.attr}")
    assert not wrong, "draw from a random.Random() of the module's own:\n" + "\n".join(wrong)
