"""Package layout: the evaluation harness lives in ``g2cons_plugins.eval``, storage in ``g2cons_plugins.storage``,
host pipelines in ``g2cons_plugins.pipelines``; the old paths still import, with a DeprecationWarning, and give the
moved module itself; the CLI is a package whose entry point and helpers still import."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from g2cons_plugins._compat import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_import_paths_warn_and_alias(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = importlib.import_module(old)
    assert any(issubclass(w.category, DeprecationWarning) and MOVED[old] in str(w.message) for w in caught)
    assert mod is new  # one module object: attributes set (monkeypatched) on either path are seen by both
    assert mod.__name__ == MOVED[old] and mod.__spec__.name == MOVED[old]
    parent, _, name = old.rpartition(".")
    assert getattr(importlib.import_module(parent), name) is new


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
