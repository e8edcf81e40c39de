"""Deprecated import paths. Modules that moved keep their old name for one release: importing the old path gives
a :class:`DeprecationWarning` and the moved module itself (the very same object, so attributes set on one are set
on the other):

- the evaluation harness: ``g2cons_plugins.<module>`` -> ``g2cons_plugins.eval.<module>``;
- storage: ``g2cons_plugins.<module>`` -> ``g2cons_plugins.storage.<module>`` (the index format and its readers);
- host pipelines: ``g2cons_plugins.<module>`` -> ``g2cons_plugins.pipelines.<module>`` (corpus and host-project
  readers, the adapters' shared integration, build engines).

A meta-path finder (not shim files at the old paths) so that the moved modules exist in one place only."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

_SUBPACKAGES = {
    "eval": ("evaluation", "report", "host_eval", "answering", "entity_graph"),
    "storage": ("persistence", "stored_io", "derived_io", "npz_view", "memory"),
    "pipelines": ("corpus_io", "host_projects", "integration", "engines"),
}
MOVED = {
    f"g2cons_plugins.{name}": f"g2cons_plugins.{pkg}.{name}" for pkg, names in _SUBPACKAGES.items() for name in names
}


class _Alias(importlib.abc.Loader):
    """Loads an old path as the moved module itself."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a placeholder, replaced in sys.modules by exec_module

    def exec_module(self, module: types.ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.target}; import it from there (the old path will be removed)",
            DeprecationWarning,
            stacklevel=2,  # the importing line (the import machinery's frames are skipped)
        )
        # The import system returns what sys.modules holds under the old name once this returns: the moved module,
        # its own __name__ and __spec__ untouched.
        sys.modules[module.__name__] = importlib.import_module(self.target)


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
