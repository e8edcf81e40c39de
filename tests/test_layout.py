"""The package reads as the method, with the scale machinery behind one door.

- The top level holds the method and its public face only: at most :data:`MAX_TOP_MODULES` modules, at most
  :data:`MAX_TOP_ENTRIES` modules and subpackages together.
- Direction: the method (:data:`METHOD`) never imports the engine, storage, hosts, the evaluation harness, the CLI
  or the index; the array layouts import nothing of the package but the data types they lay out; no import cycle
  between modules, counting lazy (function-level) imports.
- Import closures stay small: ``import g2cons_plugins.selection`` loads at most :data:`MAX_SELECTION_CLOSURE`
  package modules, retrieval and fusion at most :data:`MAX_RETRIEVAL_CLOSURE` / :data:`MAX_FUSION_CLOSURE`, none of
  the engine, storage, hosts, eval or the CLI (printed with ``pytest -s``).
- No function is longer than :data:`MAX_LINES` lines.

Imports are read from the source (``ast``), not executed: ``import x`` / ``from x import y`` at module level, inside
``if TYPE_CHECKING:``, and inside functions (a lazy import is still a dependency). Importing a submodule also runs its
parent packages' ``__init__``; those implicit edges are left out (Python allows them: the parent is already being
initialised)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import g2cons_plugins

ROOT = Path(g2cons_plugins.__file__).parent
MAX_LINES = 80
MAX_TOP_MODULES = 12
MAX_TOP_ENTRIES = 20
MAX_SELECTION_CLOSURE = 12
MAX_RETRIEVAL_CLOSURE = 32  # the concept path: its 15 modules + snapshot, arrays, text, graph, chunks, errors
MAX_FUSION_CLOSURE = 41  # fusion runs the concept path: retrieval's closure + its own 8 modules

# the method: what the paper describes, in its order (packages include their modules)
METHOD = (
    "config",
    "errors",
    "text",
    "chunks",
    "concepts",
    "graph",
    "build",
    "snapshot",
    "selection",
    "retrieval",
    "fusion",
)
# what the method never imports (module level, TYPE_CHECKING or in a function)
NOT_FROM_METHOD = ("engine", "storage", "hosts", "eval", "cli", "index")
# the array layouts import only these of the package (the data types they lay out)
ARRAYS_MAY_IMPORT = ("errors", "chunks")

# (importer, imported): a lazy import that closes a cycle, with the reason it stays.
ALLOWED_EDGES: dict[tuple[str, str], str] = {}

# "path/to/module.py:function" -> why it is longer than MAX_LINES.
LONG_FUNCTIONS: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, bool]]:
    """(imported module, at module level) for every import statement of the module ``name``."""
    yield from _raw_imports(name, path)


def _raw_imports(name: str, path: Path) -> Iterator[tuple[str, bool]]:
    """(imported module as written, resolved to an absolute name; at module level) for every import statement."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(body: list[ast.stmt], top: bool) -> Iterator[tuple[str, bool]]:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, top
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    yield (sub if sub in MODULES else target), top
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                yield from walk(node.body, False)
                yield from walk(node.orelse, top)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(node.body, False)
            else:
                for field in ("body", "orelse", "handlers", "finalbody"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        yield from walk(inner, top)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")).body, True)


def _graph(module_level_only: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        graph[name] = {
            target
            for target, top in _imports(name, path)
            if target in MODULES and target != name and (top or not module_level_only)
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(cycle: list[str], graph: dict[str, set[str]]) -> str:
    members = set(cycle)
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & members))}" for m in cycle)


def test_no_import_cycle_at_module_level() -> None:
    graph = _graph(module_level_only=True)
    assert not [_describe(c, graph) for c in _cycles(graph)]


def test_no_import_cycle_counting_lazy_imports() -> None:
    graph = _graph(module_level_only=False)
    for importer, imported in ALLOWED_EDGES:
        assert imported in graph[importer], f"{importer} no longer imports {imported}: drop it from ALLOWED_EDGES"
        graph[importer].discard(imported)
    assert not [_describe(c, graph) for c in _cycles(graph)]


def test_the_checker_sees_imports() -> None:
    graph = _graph(module_level_only=False)
    assert "g2cons_plugins.storage.persistence" in graph["g2cons_plugins.index"]  # a lazy import, in a method
    assert "g2cons_plugins.embedders" in graph["g2cons_plugins.storage.persistence"]  # `from ..embedders import`
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_build_save_load_gives_no_deprecation_warning(tmp_path: Path) -> None:
    code = (
        "import g2cons_plugins, g2cons_plugins.cli, g2cons_plugins.hosts\n"
        "from g2cons_plugins import G2ConSIndex\n"
        "idx = G2ConSIndex.build([('a', 'Marie Curie was born in Warsaw.'), ('b', 'Warsaw is in Poland.')],"
        " embedder='hash', engine='local')\n"
        f"idx.save({str(tmp_path / 'i')!r})\n"
        f"G2ConSIndex.load({str(tmp_path / 'i')!r}).retrieve('Warsaw')\n"
    )
    res = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-2000:]


def _long_functions() -> dict[str, int]:
    out = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_LINES:
                    out[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = n
    return out


def test_no_long_function_without_a_reason() -> None:
    long = _long_functions()
    unexplained = {k: n for k, n in long.items() if k not in LONG_FUNCTIONS}
    assert not unexplained, f"functions over {MAX_LINES} lines: split them into named steps, or say why: {unexplained}"
    stale = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not stale, f"no longer over {MAX_LINES} lines (or gone): drop them from LONG_FUNCTIONS: {stale}"
    assert all(reason.strip() for reason in LONG_FUNCTIONS.values())


@pytest.mark.parametrize(
    "package", ["arrays", "engine", "storage", "embedders", "hosts", "hosts.pipelines", "eval", "cli", "text"]
)
def test_subpackages_import(package: str) -> None:
    mod = importlib.import_module(f"g2cons_plugins.{package}")
    assert mod.__doc__
    names = [n for n in MODULES if n.startswith(f"g2cons_plugins.{package}.") and not n.endswith(".__main__")]
    assert names and all(importlib.import_module(n) for n in names)


def _group(module: str) -> str:
    """``g2cons_plugins.retrieval.lexical`` -> ``retrieval``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_top_level_is_the_method() -> None:
    entries = sorted(
        p.name
        for p in ROOT.iterdir()
        if p.name != "__pycache__" and (p.suffix == ".py" or (p / "__init__.py").exists())
    )
    modules = [e for e in entries if e.endswith(".py")]
    print(f"\ntop level: {len(modules)} modules, {len(entries)} entries: {entries}")
    assert len(modules) <= MAX_TOP_MODULES, modules
    assert len(entries) <= MAX_TOP_ENTRIES, entries
    allowed = {f"{m}.py" for m in METHOD} | {"__init__.py", "index.py"}
    assert set(modules) <= allowed, sorted(set(modules) - allowed)


def test_the_method_never_imports_the_engine() -> None:
    graph = _graph(module_level_only=False)
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if _group(m) in METHOD
        for t in targets
        if _group(t) in NOT_FROM_METHOD
    )
    assert not bad


def test_the_array_layer_imports_nothing_of_the_package() -> None:
    graph = _graph(module_level_only=False)
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if _group(m) == "arrays"
        for t in targets
        if _group(t) not in ("arrays", *ARRAYS_MAY_IMPORT)
    )
    assert not bad


def _closure(module: str) -> list[str]:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('g2cons_plugins')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return list(ast.literal_eval(out.strip()))


@pytest.mark.parametrize(
    ("module", "most"),
    [
        ("g2cons_plugins.selection", MAX_SELECTION_CLOSURE),
        ("g2cons_plugins.retrieval", MAX_RETRIEVAL_CLOSURE),
        ("g2cons_plugins.fusion", MAX_FUSION_CLOSURE),
    ],
)
def test_import_closures_stay_small(module: str, most: int) -> None:
    loaded = _closure(module)
    print(f"\nimport {module}: {len(loaded)} package modules: {loaded}")
    assert len(loaded) <= most, loaded
    assert not [m for m in loaded if _group(m) in NOT_FROM_METHOD]


def test_tests_mirror_the_package() -> None:
    """A folder of tests per subpackage (plus the adapters' integration and the docs' examples): a reader finds
    the tests of what they change. Tests of the top-level modules stay at the top of tests/."""
    tests = Path(__file__).parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name not in ("__pycache__", "data")}
    folders = {name for name in folders if not name.startswith(".")}  # a plugin's cache
    subpackages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert folders - {"adapters", "docs"} <= subpackages, sorted(folders - subpackages)
    assert all(any(f.glob("test_*.py")) for f in (tests / name for name in folders))
