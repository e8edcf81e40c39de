"""The adapters stand on the core's public face, and the hosts on the method, in one direction.

- The adapters (``langchain_g2cons``, ``llama_index.retrievers.g2cons``) import of ``g2cons_plugins`` only the
  names in ``g2cons_plugins.__all__``, ``g2cons_plugins.errors``, ``g2cons_plugins.config`` and
  ``g2cons_plugins.hosts`` (with ``hosts.pipelines.*``, what the adapters share): never the evaluation harness,
  the fusion's or retrieval's modules, storage or the engine.
- No import cycle inside either adapter, counting imports inside functions.
- ``g2cons_plugins.hosts`` never imports the evaluation harness, and the core (all but ``hosts``, ``eval`` and
  ``cli``) imports neither.
- ``import g2cons_plugins.hosts.pipelines.integration`` (every adapter does) loads neither the graph walk (scipy)
  nor the extraction readers.

Imports are read from the source with ``ast`` (module level, ``if TYPE_CHECKING:`` and inside functions), not run.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import g2cons_plugins

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "g2cons_plugins"
ADAPTERS = {
    "langchain_g2cons": REPO / "adapters" / "langchain-g2cons" / "langchain_g2cons",
    "llama_index.retrievers.g2cons": REPO
    / "adapters"
    / "llama-index-retrievers-g2cons"
    / "llama_index"
    / "retrievers"
    / "g2cons",
}
ALLOWED_MODULES = ("g2cons_plugins.errors", "g2cons_plugins.config", "g2cons_plugins.hosts")


def _imports(path: Path, package: str) -> Iterator[tuple[str, str | None, int]]:
    """``(module, name or None, line)`` for every import in ``path`` (a module of ``package``), relative ones
    resolved; ``name`` is the imported name of a ``from`` import."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            for alias in node.names:
                yield module, alias.name, node.lineno


def _allowed(module: str, name: str | None) -> bool:
    if module == "g2cons_plugins":
        return name is not None and name in g2cons_plugins.__all__
    return any(module == m or module.startswith(m + ".") for m in ALLOWED_MODULES)


def _core_imports_of(folder: Path, package: str) -> list[str]:
    bad = []
    for path in sorted(folder.glob("*.py")):
        for module, name, line in _imports(path, package):  # every module sits in the package's own folder
            if module.split(".")[0] == "g2cons_plugins" and not _allowed(module, name):
                what = f"from {module} import {name}" if name else f"import {module}"
                bad.append(f"{path.name}:{line}: {what}")
    return bad


@pytest.mark.parametrize("package", sorted(ADAPTERS))
def test_adapters_import_only_the_public_api_and_hosts(package: str) -> None:
    bad = _core_imports_of(ADAPTERS[package], package)
    assert not bad, "the adapters use the core's public API and g2cons_plugins.hosts only:\n" + "\n".join(bad)


def test_the_import_check_sees_what_it_must_refuse(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "from g2cons_plugins import G2ConSIndex, fuse_report\n"
        "from g2cons_plugins.errors import InputError\n"
        "from g2cons_plugins.hosts.pipelines.integration import token_length\n"
        "def f():\n"
        "    from g2cons_plugins.eval.report import write_report\n"
        "    from g2cons_plugins import _WHERE\n"
        "    import g2cons_plugins.storage.outputs\n"
    )
    bad = _core_imports_of(tmp_path, "pkg")
    assert [b.rpartition(": ")[2] for b in bad] == [
        "from g2cons_plugins.eval.report import write_report",
        "from g2cons_plugins import _WHERE",
        "import g2cons_plugins.storage.outputs",
    ]


def _module_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """Module -> modules of the same package it imports (``from . import x`` counts as importing ``x``)."""
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        deps = set()
        for module, name, _ in _imports(path, package):
            if module == package and name in names:
                deps.add(name)
            elif module.startswith(package + "."):
                deps.add(module[len(package) + 1 :].split(".")[0])
        graph[path.stem] = {d for d in deps if d in names and d != path.stem and d != "__init__"}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a path that returns to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w) :] + [w]
            if w not in state and (found := visit(w)):
                return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


@pytest.mark.parametrize("package", sorted(ADAPTERS))
def test_no_import_cycle_in_the_adapters(package: str) -> None:
    graph = _module_graph(ADAPTERS[package], package)
    assert graph, package
    cycle = _cycle(graph)
    assert cycle is None, f"{package}: import cycle (imports inside functions count): {' -> '.join(cycle or [])}"


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_hosts_never_import_the_evaluation_harness() -> None:
    bad = []
    for path in sorted((CORE / "hosts").rglob("*.py")):
        package = ".".join(path.relative_to(CORE.parent).parts[:-1])  # a module's package, or an __init__'s own
        for module, _, line in _imports(path, package):
            if module == "g2cons_plugins.eval" or module.startswith("g2cons_plugins.eval."):
                bad.append(f"{path.relative_to(REPO)}:{line}: {module}")
    assert not bad, "hosts -> eval: the harness imports the hosts, never the reverse:\n" + "\n".join(bad)


def test_the_core_never_imports_hosts_or_eval() -> None:
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        if path.relative_to(CORE).parts[0] in ("hosts", "eval", "cli"):
            continue
        package = ".".join(path.relative_to(CORE.parent).parts[:-1])
        for module, name, line in _imports(path, package):
            full = f"{module}.{name}" if module == "g2cons_plugins" and name else module
            if full.split(".")[:2] in (["g2cons_plugins", "hosts"], ["g2cons_plugins", "eval"]):
                bad.append(f"{path.relative_to(REPO)}:{line}: {full}")
    assert not bad, "the core imports hosts or eval:\n" + "\n".join(bad)


def test_the_adapters_shared_module_is_light() -> None:
    code = (
        "import sys\n"
        "import g2cons_plugins.hosts.pipelines.integration\n"
        "heavy = ['scipy', 'g2cons_plugins.hosts.graph_walk', 'g2cons_plugins.hosts.replay', 'g2cons_plugins.eval']\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""


def test_hosts_public_names_load_on_first_use() -> None:
    import g2cons_plugins.hosts as hosts

    for name in hosts.__all__:
        assert getattr(hosts, name) is not None
    assert sorted(hosts.__all__) == hosts.__all__
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = hosts.no_such_name
