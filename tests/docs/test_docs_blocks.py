"""Every ```python block of the docs site (docs/**/*.md) runs as written, offline.

The blocks of one page run in order in one fresh interpreter (a page builds on its earlier blocks), in a scratch
folder that sees the repository's ``examples/``; a traceback names the page and its line. A block preceded by
``<!-- no-test: REASON -->`` (a key, the network) is not run: it is reported as a skipped test with that reason.
Also checked: the parameters page lists every ``G2ConSConfig`` field, and no page, README or tracked file name
carries an issue number (users do not know them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
NO_TEST = re.compile(r"<!--\s*no-test:\s*(.+?)\s*-->\s*\n\s*$")
ISSUE = re.compile(r"\bissues?[ _-]?#?\d+|\bissue\d+", re.I)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)


def page_blocks(page: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(runnable blocks, skipped blocks) of one page: (line of the code's first line, code or reason)."""
    text = page.read_text(encoding="utf-8")
    run, skip = [], []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start(1)) + 1
        before = text[max(0, m.start() - 300) : m.start()]
        reason = NO_TEST.search(before)
        (skip if reason else run).append((line, reason.group(1) if reason else m.group(1)))
    return run, skip


def rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


RUNNABLE = [(rel(p), b) for p in pages() if (b := page_blocks(p)[0])]
SKIPPED = [(f"{rel(p)}:{line}", reason) for p in pages() for line, reason in page_blocks(p)[1]]


def program(page: str, blocks: list[tuple[int, str]]) -> str:
    """One script that runs the page's blocks in order, each compiled with the page as its file name and padded
    so that a traceback's line numbers are the page's."""
    parts = ["import sys", "ns = {'__name__': '__main__'}"]
    for line, code in blocks:
        padded = "\n" * (line - 1) + code
        parts.append(f"exec(compile({padded!r}, {page!r}, 'exec'), ns)")
        parts.append(f"print('--- block at {page}:{line} ran', file=sys.stderr)")
    return "\n".join(parts) + "\n"


def test_the_docs_have_runnable_blocks() -> None:
    assert len(RUNNABLE) >= 5
    assert len(SKIPPED) <= 3, "keep the blocks that cannot run offline few"


@pytest.mark.parametrize("page,blocks", RUNNABLE, ids=[p for p, _ in RUNNABLE])
def test_docs_page_blocks_run_offline(page: str, blocks: list[tuple[int, str]], tmp_path: Path) -> None:
    code = "\n".join(c for _, c in blocks)
    if "llama_index" in code:
        pytest.importorskip("llama_index.retrievers.g2cons")
    if "langchain" in code:
        pytest.importorskip("langchain_g2cons")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", program(page, blocks)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, f"{page}\n{proc.stderr[-4000:]}"


@pytest.mark.parametrize("where,reason", SKIPPED, ids=[w for w, _ in SKIPPED])
def test_docs_block_not_run_offline(where: str, reason: str) -> None:
    pytest.skip(f"{where}: {reason}")


def test_parameters_page_lists_every_config_field_with_its_default() -> None:
    """docs/parameters.md, "Every field": one row per G2ConSConfig parameter by its full name (``kappa``,
    ``engine.ann_kind``), whose "our default" cell holds the parameter's default as Python writes it (commas and
    backticks aside: 12,000 is 12000, `"score"` is "score")."""
    from g2cons_plugins.config import parameter_defaults

    text = (DOCS / "parameters.md").read_text(encoding="utf-8").split("## Every field", 1)[1]
    rows = {}
    for m in re.finditer(r"^\|\s*`([a-z_0-9.]+)`\s*\|(.*)$", text, re.M):
        rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    defaults = parameter_defaults()
    missing = sorted(name for name in defaults if name not in rows)
    assert not missing, f"docs/parameters.md has no row for {missing}"
    stale = sorted(set(rows) - set(defaults))
    assert not stale, f"docs/parameters.md has rows for parameters G2ConSConfig no longer has: {stale}"
    wrong = []
    for name, default in defaults.items():
        cell = rows[name][2].replace(",", "").replace("`", "")
        if repr(default).replace("'", '"') not in cell:
            wrong.append(f"{name}: code {default!r}, page {rows[name][2]!r}")
    assert not wrong, "docs/parameters.md defaults differ from G2ConSConfig: " + "; ".join(wrong)


def test_no_issue_numbers_in_docs_readme_or_file_names() -> None:
    for path in [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml", *pages()]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not ISSUE.search(line), f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    named = [name for name in listed.stdout.splitlines() if ISSUE.search(name)]
    assert not named, named


def test_guarantees_name_tests_that_exist() -> None:
    """Every test file and test function docs/guarantees.md names as a guarantee's backing exists."""
    text = (DOCS / "guarantees.md").read_text(encoding="utf-8")
    files = set(re.findall(r"tests/((?:\w+/)*test_\w+\.py)", text))  # tests/fusion/test_x.py -> fusion/test_x.py
    names = set(re.findall(r"\b(test_\w+)(?!\.py)\b", text)) - {Path(f).stem for f in files}
    core = list(ROOT.glob("tests/**/test_*.py"))
    sources = [*core, *ROOT.glob("adapters/*/tests/test_*.py")]
    known = {p.relative_to(ROOT / "tests").as_posix() for p in core} | {p.name for p in sources[len(core) :]}
    assert files <= known, sorted(files - known)
    defined = set(
        re.findall(r"^(?:async )?def (test_\w+)", "\n".join(p.read_text(encoding="utf-8") for p in sources), re.M)
    )
    assert names and names <= defined, sorted(names - defined)


GUIDES = sorted((DOCS / "guides").glob("*.md")) + sorted((DOCS / "api").glob("*.md"))
GUIDES += [DOCS / "getting-started.md", DOCS / "index.md"]


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: rel(p))
def test_guide_code_lines_fit_the_sites_width(page: Path) -> None:
    """Code lines of the guides stay within 100 characters: the rendered site cuts longer ones (their comments
    hidden)."""
    inside, long = False, []
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            inside = not inside
        elif inside and len(line) > 100:
            long.append(f"{rel(page)}:{n}: {len(line)} characters")
    assert not long, "\n".join(long)
