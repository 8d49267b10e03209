"""deploy/Dockerfile read as a builder reads it, for tests that cannot build images: its
stages and instructions, and what its COPY lines take from the build context once
.dockerignore has filtered it (Docker's rules for the patterns it uses: segments matched
like file names, ``**`` for any depth, ``!`` taking a path back, the last match winning)."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tests.conftest import ROOT

DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [rest for word, rest in self.instructions if word == keyword]

    def last(self, keyword: str) -> str:
        found = self.all(keyword)
        assert found, f"stage {self.name} has no {keyword}"
        return found[-1]

    def exec_form(self, keyword: str) -> list[str]:
        """CMD or ENTRYPOINT, which must be in exec (JSON) form: a shell would stand between
        the signal Kubernetes sends and the server."""
        value = json.loads(self.last(keyword))
        assert isinstance(value, list) and all(isinstance(v, str) for v in value)
        return value

    def env(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for rest in self.all("ENV"):
            for word in shlex.split(rest):
                key, sep, value = word.partition("=")
                assert sep, f"ENV {rest!r}: write KEY=value"
                found[key] = value
        return found

    def copies(self) -> list[Copy]:
        return [_copy(rest) for rest in self.all("COPY")]

    def runs(self) -> list[list[str]]:
        return [words for rest in self.all("RUN") for words in _commands(rest)]

    def workdir(self) -> str:
        return self.last("WORKDIR")


def build_step(stage: Stage) -> tuple[str, list[str]]:
    """The one script a stage runs (``sh SCRIPT ARGS...``), as its path in the context (where
    a COPY line took it from) and the arguments it is given."""
    [(script, *args)] = [words[1:] for words in stage.runs() if words[:1] == ["sh"]]
    for step in stage.copies():
        for source in step.sources:
            landed = PurePosixPath(step.dest) / PurePosixPath(source).name
            if step.stage is None and (landed == PurePosixPath(script)):
                return source, args
    raise AssertionError(f"stage {stage.name} runs {script}, which no COPY line brings")


@dataclass(frozen=True)
class Copy:
    sources: list[str]
    dest: str
    stage: str | None  # --from


def _copy(rest: str) -> Copy:
    words = shlex.split(rest)
    flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--"))
    paths = [w for w in words if not w.startswith("--")]
    return Copy(paths[:-1], paths[-1], flags.get("from"))


def _commands(rest: str) -> list[list[str]]:
    """A RUN line as the commands it chains with ``&&``, each command's words, leading
    VAR=value assignments left out."""
    commands = []
    for command in rest.split("&&"):
        words = shlex.split(command)
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
            words.pop(0)
        commands.append(words)
    return commands


def stages(path: Path = DOCKERFILE) -> dict[str, Stage]:
    """The Dockerfile's stages by name, ARGs before the first FROM substituted."""
    args: dict[str, str] = {}
    found: dict[str, Stage] = {}
    current: Stage | None = None
    for keyword, rest in _instructions(path.read_text()):
        if keyword == "ARG" and current is None:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            base, _, name = rest.partition(" AS ")
            base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base.strip())
            current = found[name.strip()] = Stage(name.strip(), base)
        else:
            assert current is not None, f"{keyword} before FROM"
            current.instructions.append((keyword, rest))
    return found


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), " ".join(rest.split())))
    return found


def _patterns() -> list[tuple[bool, tuple[str, ...]]]:
    """(excludes, segments) for each line of .dockerignore."""
    found = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        found.append((not negated, PurePosixPath(line.lstrip("!")).parts))
    return found


def _matches(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_matches(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], pattern[0])
        and _matches(pattern[1:], parts[1:])
    )


def ignored(relative: str) -> bool:
    """Whether .dockerignore keeps a path of the context (relative, with /) from the build."""
    parts = PurePosixPath(relative).parts
    excluded = False
    for excludes, pattern in _patterns():
        # A pattern naming a directory takes what is under it.
        if any(_matches(pattern, parts[:n]) for n in range(1, len(parts) + 1)):
            excluded = excludes
    return excluded


def _walked(directory: str) -> bool:
    """Whether anything under a directory may reach the builder: it is not ignored, or a "!"
    line could take back something under it."""
    if not ignored(directory):
        return True
    parts = PurePosixPath(directory).parts
    return any(
        not excludes and _matches(pattern[: len(parts)], parts) for excludes, pattern in _patterns()
    )


def context_files(source: str) -> list[str]:
    """The files a COPY source names (a file or a directory, relative to the context) that
    reach the builder, relative to the context."""
    path = ROOT / source
    if path.is_file():
        return [] if ignored(source) else [source]
    found = []
    for dirpath, dirnames, names in os.walk(path):
        relative = PurePosixPath(Path(dirpath).relative_to(ROOT).as_posix())
        # Ignored directories are not walked (node_modules would take long to list), unless
        # a "!" line takes something under them back.
        dirnames[:] = sorted(d for d in dirnames if _walked(str(relative / d)))
        found += [str(relative / n) for n in names if not ignored(str(relative / n))]
    return sorted(found)


def inside(root: Path, workdir: str, path: str) -> Path:
    """Where a path of a stage's filesystem (absolute, or relative to its WORKDIR then) lies in
    ``root``, the directory standing for that filesystem."""
    return root / PurePosixPath("/", workdir, path).relative_to("/")


def replay(
    stage: Stage, root: Path, roots: dict[str, Path], built: Callable[[str], None]
) -> Iterator[tuple[Path, list[str]]]:
    """Do a stage's WORKDIR and COPY lines, in order, into ``root`` (standing for its
    filesystem): from the context as .dockerignore filters it, or (--from) out of another
    stage's root in ``roots``, once ``built`` has waited for that stage. Yield each script the
    stage runs (``sh SCRIPT ARGS``), as the directory it runs in and its words, paths mapped
    into ``root``, for the caller to run. Other RUN lines (users, clean-up) are not run."""
    workdir = "/"
    for keyword, rest in stage.instructions:
        if keyword == "WORKDIR":
            workdir = rest
            inside(root, workdir, ".").mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            step = _copy(rest)
            assert step.dest.endswith("/"), f"COPY to {step.dest}: a directory, ending in /"
            dest = inside(root, workdir, step.dest)
            for source in step.sources:
                if step.stage is not None:
                    built(step.stage)
                    shutil.copytree(
                        inside(roots[step.stage], "/", source), dest, dirs_exist_ok=True
                    )
                    continue
                files = context_files(source)
                assert files, f"COPY {source}: the context has nothing there"
                for relative in files:
                    path = PurePosixPath(relative)
                    under = (
                        path.relative_to(source.rstrip("/"))
                        if (ROOT / source).is_dir()
                        else path.name
                    )
                    (dest / under).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / relative, dest / under)
        elif keyword == "RUN":
            for words in _commands(rest):
                if words[:1] == ["sh"]:
                    mapped = [str(inside(root, "/", w)) if w.startswith("/") else w for w in words]
                    yield inside(root, workdir, "."), mapped
