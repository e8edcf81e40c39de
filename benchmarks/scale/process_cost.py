"""What one process pays to use the library, under two code trees in turn: the import, a query process (load a
saved index, answer questions) and a build, each in a fresh interpreter, rounds taking turns.

    python benchmarks/scale/process_cost.py --before /tmp/before_tree --n 5000 --rounds 5 \
        --out benchmarks/scale/results/process_cost.json

``--before``: a checkout of the code to compare with (``git archive REV | tar -x -C DIR``); this tree is "after".
Each job prints one JSON line: seconds and peak resident set (``ru_maxrss``), and which heavy packages it imported.
The index each tree queries is the one it built in the first round (generated passages, ``corpus.py``, wordllama).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

JOB = r"""
import json, os, resource, sys, time
sys.path.insert(0, {here!r})
t0 = time.perf_counter()
from g2cons_plugins import G2ConSIndex
out = {{"import_s": time.perf_counter() - t0}}
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmRSS:"))
out["rss_after_import_mb"] = rss()
job, path = {job!r}, {path!r}
if job == "build":
    import corpus
    t = time.perf_counter()
    G2ConSIndex.build(corpus.passages({n}, 0), embedder="wordllama").save(path)
    out["build_and_save_s"] = time.perf_counter() - t
else:
    with open(os.path.join({data!r}, "musique/ketrag500_questions.jsonl"), encoding="utf-8") as f:
        qs = [json.loads(l)["question"] for l in f if l.strip()][:20]
    t = time.perf_counter()
    idx = G2ConSIndex.load(path)
    for q in qs:
        idx.retrieve(q)
    out["load_and_20_queries_s"] = time.perf_counter() - t
out["process_s"] = time.perf_counter() - t0
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["imported"] = sorted({{m.split(".")[0] for m in sys.modules}} & {{"nltk", "sklearn", "pandas", "pyarrow"}})
print(json.dumps(out))
"""


def run(tree: Path, job: str, path: Path, n: int, data: Path) -> dict[str, Any]:
    code = JOB.format(here=str(HERE), job=job, path=str(path), n=n, data=str(data))
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=tree)
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the code tree to compare with")
    ap.add_argument("--n", type=int, default=5000, help="passages of the build job")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("G2CONS_DATA", ROOT.parent / "shared" / "data")))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: remove it first")
    trees = {"before": args.before.resolve(), "after": ROOT}
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {t: {"build": [], "query": []} for t in trees}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for name, tree in trees.items() if r % 2 == 0 else reversed(list(trees.items())):
                path = Path(work) / f"{name}_{r}"
                rows[name]["build"].append(run(tree, "build", path, args.n, args.data))
                rows[name]["query"].append(run(tree, "query", Path(work) / f"{name}_0", args.n, args.data))
                print(name, r, json.dumps(rows[name]["build"][-1]), json.dumps(rows[name]["query"][-1]), flush=True)
    med: dict[str, dict[str, float]] = {}
    for name in trees:
        med[name] = {}
        for job in ("build", "query"):
            for key in rows[name][job][0]:
                if key != "imported":
                    med[name][f"{job}.{key}"] = round(statistics.median(x[key] for x in rows[name][job]), 3)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    result = {
        "command": " ".join(["python", "benchmarks/scale/process_cost.py", *sys.argv[1:]]),
        "commit": commit.stdout.strip(),
        "cpus": os.cpu_count(),
        "n_passages": args.n,
        "median": med,
        "imported": {t: {j: rows[t][j][0]["imported"] for j in rows[t]} for t in trees},
        "rounds": rows,
    }
    from g2cons_plugins.storage.outputs import atomic_write_text

    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    print(f"\n| median of {args.rounds} | before | after |\n|---|---:|---:|")
    for key in med["after"]:
        print(f"| {key} | {med['before'].get(key, float('nan')):,.3f} | {med['after'][key]:,.3f} |")
    print(f"imported: {result['imported']}")


if __name__ == "__main__":
    main()
