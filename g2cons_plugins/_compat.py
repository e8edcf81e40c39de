"""Deprecated import paths: the evaluation harness moved from ``g2cons_plugins.<module>`` to
``g2cons_plugins.eval.<module>``. Importing an old path still works and gives a :class:`DeprecationWarning`.

A meta-path finder (not shim files at the old paths) so that the moved modules exist in one place only."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

MOVED = {
    f"g2cons_plugins.{name}": f"g2cons_plugins.eval.{name}"
    for name in ("evaluation", "report", "host_eval", "answering", "entity_graph")
}


class _Alias(importlib.abc.Loader):
    """Loads an old path as a module that re-exports the moved module's names."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default: a fresh module object

    def exec_module(self, module: types.ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.target}; import it from there (the old path will be removed)",
            DeprecationWarning,
            stacklevel=2,
        )
        real = importlib.import_module(self.target)
        module.__dict__.update({k: v for k, v in vars(real).items() if not (k.startswith("__") and k.endswith("__"))})
        module.__doc__ = real.__doc__


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        return None if new is None else importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Register the finder once (idempotent)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())  # before path-based and editable-install finders
