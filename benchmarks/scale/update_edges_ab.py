"""The two paths of ``graph.update_edges`` (patching the touched edges and adjacency rows, ``SPARSE_SHARE`` 1e-9,
against linear passes over the edges, ``SPARSE_SHARE`` 1e9) on trickle adds of 1 and 10 chunks to a saved index
(after one add, so that first-add copies are not counted); prints the seconds of each ``update_edges`` call.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/scale/update_edges_ab.py /tmp/mem/idx_100000 3
    flock /tmp/scale1m.lock nice -n 10 python benchmarks/scale/update_edges_ab.py /tmp/scale1m/index 1

(second argument: repetitions).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def main() -> None:
    from g2cons_plugins import G2ConSIndex, graph
    from g2cons_plugins import update as upd

    idx = G2ConSIndex.load(sys.argv[1])
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rows = list(corpus.passages(1 + 22 * reps, 0, start=len(idx.chunks)))
    idx.add(rows[:1])
    real = upd.update_edges
    seconds: list[float] = []

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        out = real(*a, **k)
        seconds.append(time.perf_counter() - t)
        return out

    upd.update_edges = timed  # type: ignore[assignment]
    i = 1
    for _ in range(reps):
        for share in (1e-9, 1e9):
            graph.SPARSE_SHARE = share
            for size in (1, 10):
                idx.add(rows[i : i + size])
                i += size
                print(
                    f"{'patching' if share < 1 else 'linear'} add {size}: update_edges {seconds[-1]:.3f} s", flush=True
                )


if __name__ == "__main__":
    main()
