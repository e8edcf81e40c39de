"""How much of an add / remove of 1% is the unit index's update: ``unit_ann_for`` timed inside ``G2ConSIndex.add``
and ``remove`` on an index saved with its graph (loaded memory-mapped, so the add includes the one copy of it).

    OPENBLAS_NUM_THREADS=1 nice -n 5 python benchmarks/scale/ann_update_parts.py --index /tmp/ann_wt/idx100k_ann

(``/tmp/ann_wt/idx100k_ann``: see ``ann_overfetch.py``.) Prints seconds: add, remove, and the two graph updates.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def main() -> None:
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.arrays import unit_hnsw as vector_index

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    args = ap.parse_args()
    idx = G2ConSIndex.load(args.index)
    new = list(corpus.passages(len(idx.chunks) // 100, start=len(idx.chunks)))
    graph_s: list[float] = []
    real = vector_index.unit_ann_for

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        out = real(*a, **k)
        graph_s.append(round(time.perf_counter() - t, 2))
        return out

    vector_index.unit_ann_for = timed  # type: ignore[assignment]
    t = time.perf_counter()
    idx.add(new)
    print("add", round(time.perf_counter() - t, 2), flush=True)
    t = time.perf_counter()
    idx.remove([c["id"] for c in new])
    print("remove", round(time.perf_counter() - t, 2), flush=True)
    print("graph updates", graph_s)


if __name__ == "__main__":
    main()
