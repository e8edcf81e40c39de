"""Ray's embedding stage alone at several block sizes, 1 and 2 workers: ``RayEngine(batch_size=B).embed`` of the
units of ``--n`` generated passages, each configuration in a fresh process (Ray Data started and warmed on a first
small call; the timed call includes its actor pool's start, as in a build).

    python benchmarks/scale/ray_blocks.py --n 50000 --sizes 256 1024 2048 4096 --embedder wordllama
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[5])
import corpus, ray
from g2cons_plugins.chunks import make_chunks, split_units
from g2cons_plugins.engine.build_engines import RayEngine
from g2cons_plugins.text import get_tokenizer
workers, size, n, embedder = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tok = get_tokenizer()
texts = [u.text for c in make_chunks(list(corpus.passages(n))) for u in split_units(c, tok, 150)]
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
engine = RayEngine(num_workers=workers, batch_size=size)
engine.embed(texts[:2000], embedder)
t = time.perf_counter()
engine.embed(texts, embedder)
print("RESULT", workers, size, len(texts), round(time.perf_counter() - t, 2), flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 2048, 4096])
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    here = str(Path(__file__).resolve().parent)
    rows = []
    for size in args.sizes:
        for workers in (1, 2):
            cmd = [sys.executable, "-c", CHILD, str(workers), str(size), str(args.n), args.embedder, here]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            _, w, b, units, s = next(x for x in out.splitlines() if x.startswith("RESULT ")).split()
            rows.append({"workers": int(w), "block_rows": int(b), "units": int(units), "embed_s": float(s)})
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"n": args.n, "embedder": args.embedder, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
