"""The command line prints a warning as one plain line (``g2cons: warning: ...``): no Python class name, no source
file, no source line; a caller of ``main`` keeps its own warning format (and a recorder still records)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_interrupted_select import _project  # a GraphRAG project with a few documents

from g2cons_plugins.cli import main


def test_select_root_prints_the_file_pattern_note_as_one_plain_line(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    (proj / "input" / "notes.md").write_text("not matched by the file pattern", encoding="utf-8")
    argv = [sys.executable, "-m", "g2cons_plugins.cli", "select", "--root", str(proj), "--kappa", "0.5"]
    done = subprocess.run([*argv, "--embedder", "hash", "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [x for x in done.stderr.splitlines() if "file_pattern" in x]
    assert len(lines) == 1 and lines[0].startswith("g2cons: warning: ") and "notes.md" in lines[0]
    assert "UserWarning" not in done.stderr and "warnings.warn(" not in done.stderr
    assert not any(x.startswith("  ") for x in done.stderr.splitlines())  # no source line under it


def test_main_restores_the_callers_warning_format(tmp_path: Path) -> None:
    before = warnings.formatwarning
    with pytest.warns(UserWarning, match="file_pattern"):
        proj = _project(tmp_path / "proj")
        (proj / "input" / "notes.md").write_text("not matched", encoding="utf-8")
        assert main(["select", "--root", str(proj), "--kappa", "0.5", "--embedder", "hash", "--quiet"]) == 0
    assert warnings.formatwarning is before
