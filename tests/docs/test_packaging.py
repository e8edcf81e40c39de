"""Packaging of the three distributions: SPDX license strings (no setuptools license-table warning), classifiers,
a first run that works (the adapters pull the default embedder and what their READMEs use), adapter-local tests.
The wheels themselves are built, installed and run by ``scripts/wheel_check.sh`` (called from scripts/test.sh)."""

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
DISTS = {
    "g2cons-plugins": ROOT,
    "llama-index-retrievers-g2cons": ROOT / "adapters" / "llama-index-retrievers-g2cons",
    "langchain-g2cons": ROOT / "adapters" / "langchain-g2cons",
}


def meta(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(DISTS))
def test_spdx_license_and_classifiers(name: str) -> None:
    data = meta(DISTS[name])
    project = data["project"]
    assert project["name"] == name
    assert project["license"] == "MIT"  # an SPDX expression, not the deprecated {text = ...} table
    setuptools = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools and int(re.search(r">=(\d+)", setuptools[0]).group(1)) >= 77  # PEP 639 support
    cls = project["classifiers"]
    assert "Typing :: Typed" in cls and not any(c.startswith("License ::") for c in cls)  # SPDX replaces these


def test_adapters_pull_the_default_embedder_and_what_their_readmes_use() -> None:
    li = meta(DISTS["llama-index-retrievers-g2cons"])["project"]["dependencies"]
    lc = meta(DISTS["langchain-g2cons"])["project"]["dependencies"]
    for deps in (li, lc):
        assert any(d.startswith("g2cons-plugins[wordllama]") for d in deps)
    assert any(d.startswith("llama-index-core") for d in li)
    assert any(d.startswith("langchain-text-splitters") for d in lc)
    assert any(d.startswith("langchain-core") for d in lc)
    for name in ("llama-index-retrievers-g2cons", "langchain-g2cons"):
        readme = (DISTS[name] / "README.md").read_text(encoding="utf-8")
        install = re.findall(r"^pip install .*$", readme, re.M)
        assert install[0].startswith("pip install -e .  ") or install[0].split("#")[0].strip() == "pip install -e ."
        assert "the core" in install[0]  # the core first
        assert list((DISTS[name] / "tests").glob("test_*.py"))  # adapter-local tests
