"""Single-chunk adds to a saved index, one call each, as a feed of new documents makes them: the seconds of each
add (the first pays the one-time copies of the mapped arrays a trickle grows), their median and mean, and the peak
RSS. Chunks are new ``corpus.passages`` after the index's own (ids sort after every known one).

    PYTHONPATH=$PWD python benchmarks/scale/add_stream.py --index INDEX --n 80 --out RESULT.json
    PYTHONPATH=OTHER_TREE python benchmarks/scale/add_stream.py --index INDEX --n 20   # another version of the code
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
from bench import PeakRSS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import g2cons_plugins
    from g2cons_plugins import G2ConSIndex

    mem = PeakRSS()
    idx = G2ConSIndex.load(args.index)
    n = len(idx.snapshot.stored.chunks)
    rows = list(corpus.passages(args.n, args.seed, start=n))
    mem.phase()
    seconds = []
    for row in rows:
        t0 = time.perf_counter()
        idx.add([row])
        seconds.append(round(time.perf_counter() - t0, 3))
        print(f"add {len(seconds)}: {seconds[-1]:.3f} s", file=sys.stderr, flush=True)
    later = seconds[1:]
    out = {
        "code": str(Path(g2cons_plugins.__file__).parent),
        "n_chunks": n,
        "seconds": seconds,
        "first_s": seconds[0],
        "later_median_s": statistics.median(later) if later else None,
        "later_mean_s": statistics.fmean(later) if later else None,
        "later_max_s": max(later) if later else None,
        "peak_rss_mb": mem.phase(),
    }
    print(json.dumps(out))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
