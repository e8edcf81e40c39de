"""Install lines users copy are true, and the three distributions carry the metadata a package index shows.

* every ``pip install`` of an adapter folder installs the core first (the core is not on PyPI yet), and no page
  installs an adapter by a package name that is not published;
* the GraphRAG and LightRAG guides install their host (graphrag / lightrag-hku), and ``graphrag init`` is given
  ``--model`` and ``--embedding`` (in graphrag 3 it asks for them on the terminal otherwise);
* each distribution: a license file shipped with it, authors, the paper's URL, a README without links that leave
  its folder (they break on the package index)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
DISTS = [ROOT, ROOT / "adapters" / "llama-index-retrievers-g2cons", ROOT / "adapters" / "langchain-g2cons"]
PAGES = [
    ROOT / "README.md",
    *(d / "README.md" for d in DISTS[1:]),
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").glob("*.py")),
    *sorted((ROOT / "examples").glob("*.sh")),
]
UNPUBLISHED = re.compile(r"pip install\s+[\"']?(llama-index-retrievers-g2cons|langchain-g2cons)\[")


def _lines() -> list[tuple[str, int, str, list[str]]]:
    out = []
    for page in PAGES:
        if page.name == "changelog.md":
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            out.append((page.relative_to(ROOT).as_posix(), n, line, lines[max(0, n - 4) : n - 1]))
    return out


def test_adapter_install_lines_install_the_core_first() -> None:
    bad = []
    for page, n, line, before in _lines():
        m = re.search(r"pip install (?:-e )?(?:\S+ )*[\"']?adapters/", line)
        if m:
            core_first = bool(re.search(r"-e \.(\s|\[|\"|$)", m.group(0)))
            core_before = any(re.search(r"pip install -e \.(\s|$)", b) for b in before)
            after_core = any("after the core" in x or "the core first" in x for x in [*before, line])
            if not (core_first or core_before or after_core):
                bad.append(f"{page}:{n}: {line.strip()}")
        if UNPUBLISHED.search(line):
            bad.append(f"{page}:{n}: unpublished name: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_host_guides_install_the_host_and_graphrag_init_does_not_ask() -> None:
    graphrag = (ROOT / "docs" / "guides" / "graphrag.md").read_text(encoding="utf-8")
    assert re.search(r"^pip install .*\bgraphrag\b", graphrag, re.M)
    lightrag = (ROOT / "docs" / "guides" / "lightrag.md").read_text(encoding="utf-8")
    assert re.search(r"^pip install .*\blightrag-hku\b", lightrag, re.M)
    inits = [(p, n, line) for p, n, line, _ in _lines() if re.search(r"^\s*graphrag init\b", line)]
    assert inits
    for page, n, line in inits:
        assert "--model" in line and "--embedding" in line, f"{page}:{n}: {line.strip()}"


@pytest.mark.parametrize("folder", DISTS, ids=lambda d: d.name)
def test_distribution_metadata_for_the_package_index(folder: Path) -> None:
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    files = project.get("license-files") or []
    assert files and all((folder / f).is_file() for f in files)
    assert "MIT License" in (folder / files[0]).read_text(encoding="utf-8")
    assert project.get("authors")
    urls = project.get("urls") or {}
    assert any("arxiv.org/abs/2510.24120" in u for u in urls.values())
    readme = (folder / project["readme"]).read_text(encoding="utf-8")
    leaving = re.findall(r"\]\((\.\./[^)]*)\)", readme)
    assert not leaving or folder == ROOT, leaving
    assert project["version"] and project["requires-python"] and project["description"]
