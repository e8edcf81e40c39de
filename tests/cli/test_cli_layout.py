"""Package layout: the evaluation harness lives in ``g2cons_plugins.eval``, storage in ``g2cons_plugins.storage``,
host pipelines in ``g2cons_plugins.hosts.pipelines``; the module paths deprecated in 0.1.x are gone (ImportError),
and the CLI is a package whose entry point and helpers still import."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

REMOVED = [
    "g2cons_plugins.evaluation",
    "g2cons_plugins.report",
    "g2cons_plugins.host_eval",
    "g2cons_plugins.answering",
    "g2cons_plugins.entity_graph",
    "g2cons_plugins.persistence",
    "g2cons_plugins.stored_io",
    "g2cons_plugins.derived_io",
    "g2cons_plugins.npz_view",
    "g2cons_plugins.memory",
    "g2cons_plugins.corpus_io",
    "g2cons_plugins.host_projects",
    "g2cons_plugins.integration",
    "g2cons_plugins.engines",
    "g2cons_plugins._compat",
]


@pytest.mark.parametrize("old", REMOVED)
def test_removed_import_paths_fail(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.raises(ImportError):
        importlib.import_module(old)


def test_method_package_does_not_import_the_harness() -> None:
    code = "import sys, g2cons_plugins; print(sorted(m for m in sys.modules if m.startswith('g2cons_plugins.eval')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_package_entry_points() -> None:
    from g2cons_plugins.cli import build_parser, fusion_opts, main

    assert callable(main) and callable(fusion_opts)
    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    assert {"eval", "build", "select", "query", "fuse", "add", "remove"} <= set(sub.choices)
    res = subprocess.run([sys.executable, "-m", "g2cons_plugins.cli", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "select" in res.stdout
