"""The manifest entry of a saved unit index (``unit_ann`` or ``unit_pq``): its format, unit count and parameters,
checked on load so that a mismatch names the manifest field instead of failing inside a library."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InputError, PersistError

P = TypeVar("P")


def entry_params(folder: Path, entry: Any, field: str, fmt: str, n_units: int, make: Callable[..., P]) -> P:
    """The parameters ``make(**entry["params"])`` of the manifest entry ``field`` of the version folder
    ``folder``, once its format is ``fmt`` and its count ``n_units``; else :class:`PersistError` naming the field."""
    where = folder / "manifest.json"
    if not isinstance(entry, dict) or entry.get("format") != fmt:
        got = entry.get("format") if isinstance(entry, dict) else entry
        raise PersistError(f"{where}: field '{field}.format' is {got!r}; this library reads {fmt!r}")
    if entry.get("n") != n_units:
        raise PersistError(f"{where}: field '{field}.n' is {entry.get('n')!r}, the index holds {n_units} units")
    try:
        return make(**entry["params"])
    except (InputError, TypeError, KeyError) as e:
        raise PersistError(f"{where}: field '{field}.params' is invalid ({e})") from None
