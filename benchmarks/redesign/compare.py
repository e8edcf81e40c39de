"""Compare two folders written by ``behaviour.py`` (before / after a restructuring) and say where they differ.

For every set file (``<set>.json`` or ``<set>.json.gz``) and every section (``retrieve``, ``strategies``,
``hosts``, ``fusion`` keyed by question id; ``selection``, ``config``, ``graph`` keyed by setting) it prints how
many entries were compared, how many are identical and how many differ (an entry present on one side only
differs), then the first differences with the path of the first differing value and both values. ``api`` (in every
set file) compares ``g2cons_plugins.__all__`` and the selectors ``G2ConSConfig.selector`` allows. ``meta`` (timings)
and ``summary.json`` (package path, timings) are never compared.

Exit code: 0 when nothing differs, 1 when something does, 2 on a usage error (a folder or file missing).

Command::

    python benchmarks/redesign/compare.py /work/behaviour-before /work/behaviour-after [--show 5] [--ignore api]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MISSING = "<missing>"


def load(path: Path) -> Any:
    """A JSON or gzipped JSON file."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def set_files(folder: Path) -> dict[str, Path]:
    """Set file stem (``musique__ketrag500``) -> path, for ``.json`` and ``.json.gz`` files but ``summary.json``."""
    out: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        name = p.name
        stem = name[: -len(".json.gz")] if name.endswith(".json.gz") else name[: -len(".json")] if name.endswith(
            ".json") else None  # fmt: skip
        if stem is None or stem == "summary" or stem.startswith("."):
            continue
        if stem in out:
            raise SystemExit(f"error: {folder} holds both {out[stem].name} and {name}")
        out[stem] = p
    return out


def _short(value: Any, width: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def _row(value: Any) -> bool:
    return isinstance(value, list) and not any(isinstance(v, (list, dict)) for v in value)


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The path of the first value that differs between ``a`` and ``b`` and both values (None when equal)."""
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}", a.get(k, MISSING), b.get(k, MISSING)
            d = first_difference(a[k], b[k], f"{path}/{k}")
            if d is not None:
                return d
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if _row(x) and _row(y) and x != y:  # a ranked item ([id, id, tokens, score]): show it whole
                return f"{path}[{i}]", x, y
            d = first_difference(x, y, f"{path}[{i}]")
            if d is not None:
                return d
        if len(a) != len(b):
            i = min(len(a), len(b))
            return f"{path}[{i}] (lengths {len(a)} vs {len(b)})", a[i] if i < len(a) else MISSING, (
                b[i] if i < len(b) else MISSING)  # fmt: skip
    return path or "/", a, b


def compare_entries(
    a: dict[str, Any], b: dict[str, Any]
) -> tuple[int, int, list[tuple[str, str, Any, Any]], dict[str, int]]:
    """(compared, identical, differences as (key, path, before, after), differing entries per setting) over the
    union of the keys; a setting is a sub-key of an entry (``default``, ``share@0.2``, ...)."""
    keys = sorted(set(a) | set(b))
    diffs = []
    settings: dict[str, int] = {}
    for k in keys:
        if k not in a or k not in b:
            diffs.append((k, "", a.get(k, MISSING) if k in a else MISSING, b.get(k, MISSING) if k in b else MISSING))
            continue
        d = first_difference(a[k], b[k])
        if d is not None:
            diffs.append((k, *d))
            if isinstance(a[k], dict) and isinstance(b[k], dict):
                for sub in set(a[k]) | set(b[k]):
                    if a[k].get(sub, MISSING) != b[k].get(sub, MISSING):
                        settings[sub] = settings.get(sub, 0) + 1
    return len(keys), len(keys) - len(diffs), diffs, settings


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path, help="folder written by behaviour.py on the old layout")
    ap.add_argument("after", type=Path, help="folder written by behaviour.py on the new layout")
    ap.add_argument("--show", type=int, default=5, help="differences printed per set and section (default 5)")
    ap.add_argument("--ignore", default="", help="comma-separated sections not compared (e.g. api)")
    args = ap.parse_args(argv)
    ignore = {s.strip() for s in args.ignore.split(",") if s.strip()}
    for folder in (args.before, args.after):
        if not folder.is_dir():
            print(f"error: {folder} is not a folder", file=sys.stderr)
            return 2

    rows: list[tuple[str, str, int, int, int]] = []
    shown: list[str] = []

    def record(set_name: str, section: str, a: dict[str, Any], b: dict[str, Any]) -> None:
        n, same, diffs, settings = compare_entries(a, b)
        rows.append((set_name, section, n, same, len(diffs)))
        if settings:
            by = ", ".join(f"{k}: {v}" for k, v in sorted(settings.items(), key=lambda kv: (-kv[1], kv[0])))
            shown.append(f"{set_name} / {section}: differing entries per setting: {by}")
        for key, path, x, y in diffs[: args.show]:
            shown.append(f"{set_name} / {section} / {key}{path}:\n    before {_short(x)}\n    after  {_short(y)}")
        if len(diffs) > args.show:
            shown.append(f"{set_name} / {section}: ... {len(diffs) - args.show} more differing entries")

    fa, fb = set_files(args.before), set_files(args.after)
    for stem in sorted(set(fa) | set(fb)):
        if stem not in fa or stem not in fb:
            rows.append((stem, "<file>", 1, 0, 1))
            shown.append(f"{stem}: only in {args.before if stem in fa else args.after}")
            continue
        da, db = load(fa[stem]).get("sections", {}), load(fb[stem]).get("sections", {})
        for section in sorted(set(da) | set(db)):
            if section in ignore:
                continue
            a, b = da.get(section, {}), db.get(section, {})
            if not isinstance(a, dict) or not isinstance(b, dict):
                a, b = {"value": a}, {"value": b}
            record(stem, section, a, b)

    w = max([len(r[0]) for r in rows] + [3])
    print(f"{'set':<{w}}  {'section':<10}  {'compared':>8}  {'identical':>9}  {'differing':>9}")
    for set_name, section, n, same, differing in rows:
        print(f"{set_name:<{w}}  {section:<10}  {n:>8}  {same:>9}  {differing:>9}")
    total = sum(r[4] for r in rows)
    print(f"\n{sum(r[2] for r in rows)} entries compared, {total} differing")
    if shown:
        print("\nfirst differences:")
        print("\n".join(shown))
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
