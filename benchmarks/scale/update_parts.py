"""Where the time of a small update goes: add 1, 10, 100 chunks and 1% (one call each, in that order, as
``bench.py``'s ``job_build`` does) and remove 1% of the original ids, on a saved index, with the inclusive seconds
of each part of the update (the functions below, wrapped wherever the update modules call them) and the peak RSS
of each update (sampled from /proc/self/statm every 20 ms).

    cd /work/wt-trickle && PYTHONPATH=$PWD HF_HUB_OFFLINE=1 nice -n 10 \
        python benchmarks/scale/update_parts.py --index /tmp/mem/idx_100000
    flock /tmp/scale1m.lock nice -n 10 python benchmarks/scale/update_parts.py --index /tmp/scale1m/index

``--steps`` picks the updates (default ``1,10,100,refresh,1pct,rm1pct``, the order of ``job_build``); ``--query``
runs one query after each update (the lexical index is built lazily on the first query of a snapshot: its cost
shows as ``lexical``). Parts nest (an inclusive time includes the parts it calls); ``total`` is the update call
itself. A trickle that falls back to an exact update prints why.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

# (module, function) pairs: wrapped in every g2cons_plugins module that holds the same object
PARTS = (
    ("update", "Pending.start"),
    ("trickle_store", "insert_stored"),
    ("trickle_store", "drop_stored"),
    ("trickle_store", "_split_new"),
    ("trickle_store", "_merge"),
    ("trickle_store", "_sent_unit"),
    ("trickle_store", "_embed"),
    ("trickle_store", "insert_rows"),
    ("update", "append_terms"),
    ("update", "derive_added"),
    ("update", "derive_removed"),
    ("update", "_revive"),
    ("update", "_regraph"),
    ("update", "concept_vectors"),
    ("update", "_share_live"),
    ("update", "update_edges"),
    ("edge_update", "_moved_pairs"),
    ("edge_update", "_new_pairs"),
    ("edge_update", "_restored"),
    ("edge_update", "_assembled"),
    ("edge_update", "_merged"),
    ("graph", "adjacency"),
    ("update", "pagerank"),
    ("update", "graph_stats"),
    ("update", "freeze"),
    ("snapshot", "_trickled"),
    ("arrays.unit_index", "unit_index_for"),
    ("build", "store"),
    ("snapshot", "make_snapshot"),
    ("lexical", "LexicalIndex.build"),
)

TIMES: dict[str, float] = defaultdict(float)


def _wrap(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            TIMES[name] += time.perf_counter() - t

    return timed


def _noting(fn: Any) -> Any:
    """``fn`` printing why a trickle fell back to an exact update."""

    @functools.wraps(fn)
    def noted(*a: Any, **k: Any) -> Any:
        from g2cons_plugins.engine.update import TrickleTooLarge

        try:
            return fn(*a, **k)
        except TrickleTooLarge as e:
            print(f"  exact fallback: {e}", flush=True)
            raise

    return noted


def install() -> None:
    """Wrap every part (see :data:`PARTS`) where it is defined and where it was imported."""
    import importlib

    from g2cons_plugins import snapshot

    snapshot._trickle_added = _noting(snapshot._trickle_added)  # type: ignore[attr-defined]
    snapshot._trickle_removed = _noting(snapshot._trickle_removed)  # type: ignore[attr-defined]

    mods = []
    for m in ("update", "trickle_store", "graph", "edge_update", "snapshot", "lexical", "state", "vector_index"):
        try:  # an older checkout (PYTHONPATH) may not have every module
            mods.append(importlib.import_module(f"g2cons_plugins.{m}"))
        except ImportError:
            continue
    for mod_name, qual in PARTS:
        try:
            mod = importlib.import_module(f"g2cons_plugins.{mod_name}")
        except ImportError:
            continue
        if "." in qual:
            cls_name, attr = qual.split(".")
            cls = getattr(mod, cls_name)
            raw = cls.__dict__[attr]
            fn = raw.__func__ if isinstance(raw, classmethod) else raw
            w = _wrap(attr if attr != "build" else "lexical", fn)
            setattr(cls, attr, classmethod(w) if isinstance(raw, classmethod) else w)
            continue
        fn = getattr(mod, qual, None)
        if fn is None:
            continue
        w = _wrap(qual, fn)
        for m in mods:
            if getattr(m, qual, None) is fn:
                setattr(m, qual, w)


class PeakRSS:
    """Peak resident set size (sampled every 20 ms in a daemon thread) since the last :meth:`phase`."""

    def __init__(self) -> None:
        self.peak = self.now()
        threading.Thread(target=self._run, daemon=True).start()

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, self.now())
            time.sleep(0.02)

    def phase(self) -> tuple[float, float]:
        """(RSS now, peak since the last call) in MB; resets the peak."""
        now = self.now()
        peak, self.peak = max(self.peak, now), now
        return now / 2**20, peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--steps", default="1,10,100,refresh,1pct,rm1pct")
    ap.add_argument("--query", action="store_true")
    args = ap.parse_args()
    install()
    from g2cons_plugins import G2ConSIndex

    mem = PeakRSS()
    t = time.perf_counter()
    idx = G2ConSIndex.load(args.index)
    n = len(idx.snapshot.stored.chunks)
    print(f"load {time.perf_counter() - t:.1f} s, {n:,} chunks, rss {mem.phase()[0]:,.0f} MB", flush=True)
    delta = max(1, n // 100)
    rows = list(corpus.passages(111 + delta, 0, start=n))
    base_ids = [c.id for c in idx.snapshot.stored.chunks]
    plan = {"1": rows[:1], "10": rows[1:11], "100": rows[11:111], "1pct": rows[111:]}
    results: list[tuple[str, float, float, dict[str, float]]] = []
    for step in args.steps.split(","):
        TIMES.clear()
        mem.phase()
        t = time.perf_counter()
        if step == "rm1pct":
            idx.remove(random.Random(0).sample(base_ids, delta))
        elif step == "refresh":
            idx.refresh()
        else:
            idx.add(plan[step])
        total = time.perf_counter() - t
        if args.query:
            idx.retrieve("Who founded the company that made the iPhone?")
        _, peak = mem.phase()
        trickled = not idx.refreshed
        label = step if step == "refresh" else f"{step} ({'trickle' if trickled else 'exact'})"
        results.append((label, total, peak, dict(TIMES)))
        print(f"{label}: {total:.2f} s, peak RSS {peak:,.0f} MB", flush=True)
    names = [p[1].split(".")[-1] for p in PARTS]
    names = ["lexical" if x == "build" else x for x in names]
    print("\n| part | " + " | ".join(r[0] for r in results) + " |")
    print("|---|" + "---|" * len(results))
    print("| **total** | " + " | ".join(f"**{r[1]:.2f}**" for r in results) + " |")
    for name in names:
        if any(name in r[3] for r in results):
            print(f"| {name} | " + " | ".join(f"{r[3].get(name, 0.0):.3f}" for r in results) + " |")
    print("| peak RSS MB | " + " | ".join(f"{r[2]:,.0f}" for r in results) + " |")


if __name__ == "__main__":
    main()
