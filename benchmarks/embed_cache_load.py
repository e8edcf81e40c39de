"""Embedding cache after N single-text calls (a held-out evaluation's call pattern): files written and load time,
for the code of an earlier commit ("before": one shard file pair per call) and of this working tree ("after").

Each phase runs in a fresh Python process with only that code tree's ``g2cons_plugins`` on ``sys.path``:

* fill: N calls ``CachedEmbedder(HashEmbedder(dim), cache_dir).embed([text_i])`` (the hash embedder costs ~nothing,
  so the time is the cache's own);
* load (``--repeats`` fresh processes, median): a new ``CachedEmbedder`` on that folder and its first call
  ``embed([text_0])`` (the earlier code reads every shard here), then ``embed(all N texts)`` (all cache hits).

    python benchmarks/embed_cache_load.py                 # N=10000, before = 5cfb733
    python benchmarks/embed_cache_load.py --n 2000 --before HEAD~3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from pathlib import Path
from g2cons_plugins.embedders import CachedEmbedder, HashEmbedder
phase, cache, n, dim = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
texts = [f"held-out question number {i}: who founded organisation {i % 97}?" for i in range(n)]
if phase == "fill":
    c = CachedEmbedder(HashEmbedder(dim), cache_dir=cache)
    t0 = time.perf_counter()
    for t in texts:
        c.embed([t])
    fill_s = time.perf_counter() - t0
    getattr(c, "close", lambda: None)()
    files = sum(1 for p in cache.rglob("*") if p.is_file())
    print(json.dumps({"fill_s": fill_s, "files": files, "computed": c.n_computed}))
else:
    t0 = time.perf_counter()
    c = CachedEmbedder(HashEmbedder(dim), cache_dir=cache)
    c.embed(texts[:1])
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    c.embed(texts)
    hits_s = time.perf_counter() - t1
    print(json.dumps({"load_s": load_s, "hits_s": hits_s, "computed": c.n_computed}))
"""


def run(tree: Path, *args: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"child failed ({tree}): {out.stderr}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def export(rev: str, dest: Path) -> Path:
    """``g2cons_plugins`` as it is at ``rev`` (git archive), unpacked under ``dest``."""
    git = ["git", "-C", str(ROOT), "archive", rev, "g2cons_plugins"]
    archive = subprocess.run(git, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def measure(tree: Path, work: Path, n: int, dim: int, repeats: int) -> dict[str, float]:
    cache = work / "cache"
    fill = run(tree, "fill", str(cache), str(n), str(dim))
    loads = [run(tree, "load", str(cache), str(n), str(dim)) for _ in range(repeats)]
    assert fill["computed"] == n and all(x["computed"] == 0 for x in loads), (fill, loads)
    return {
        "files": fill["files"],
        "fill_s": fill["fill_s"],
        "load_s": statistics.median(x["load_s"] for x in loads),
        "hits_s": statistics.median(x["hits_s"] for x in loads),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="single-text calls that fill the cache (default 10000)")
    ap.add_argument("--dim", type=int, default=256, help="vector dimension (default 256, WordLlama's)")
    ap.add_argument("--before", default="5cfb733", help="git revision of the earlier code (default 5cfb733)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh load processes per tree, median (default 3)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "before-code").mkdir()
        trees = {f"before ({a.before})": export(a.before, base / "before-code"), "after (working tree)": ROOT}
        print(f"cache after {a.n:,} single-text calls, dim {a.dim}; load = new CachedEmbedder + first embed")
        print(f"{'code':<24} {'files':>7} {'fill s':>8} {'load s':>9} {'all-hit embed s':>16}")
        for label, tree in trees.items():
            work = base / label.split()[0]
            work.mkdir()
            r = measure(tree, work, a.n, a.dim, a.repeats)
            print(f"{label:<24} {r['files']:>7,.0f} {r['fill_s']:>8.2f} {r['load_s']:>9.4f} {r['hits_s']:>16.4f}")


if __name__ == "__main__":
    main()
