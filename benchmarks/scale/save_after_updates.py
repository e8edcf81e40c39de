"""Saving an index after trickle updates: the trickle log (format version 6) against refresh() + a whole save.

    nice -n 10 python benchmarks/scale/save_after_updates.py --index /tmp/s11/idx_80000c --n 80000 \\
        --out benchmarks/scale/results/save_after_updates_80k.json
    nice -n 10 python benchmarks/scale/save_after_updates.py --index /tmp/s13/idx_1m --n 1000000 \\
        --out benchmarks/scale/results/save_after_updates_1m.json

``--index``: an index ``bench.py`` saved for ``corpus.passages(N, 0)`` (``--job build``). The updating process
loads it and makes ``bench.py``'s updates (``job_update``: add 1, 10 and 100 new chunks, then 80 one at a time,
the next 1%, then remove 1% of the original ids), then:

1. ``log``: saves to ``log/`` in a new temporary folder beside INDEX (the same file system: the new version links
   the loaded version's files and writes the log); seconds and peak RSS of the save;
2. ``load``: a fresh process loads ``log/`` (reads the exact snapshot, replays the log): seconds, peak RSS, and
   whether 20 questions retrieve exactly what the updating process retrieved (ids, order and scores);
3. ``whole``: the updating process refreshes and saves to ``whole/`` (what every save did before): seconds and
   peak RSS of each.

Peak RSS is sampled every 20 ms (``bench.PeakRSS``), per step. The temporary folder is removed at the end (the
index given is only read).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
import corpus  # noqa: E402

N_CHECK = 20


def _questions() -> list[str]:
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["question"] for line in f if line.strip()][:N_CHECK]


def _results(idx: Any) -> list[list[tuple[str, float]]]:
    return [[(r.unit_id, r.score) for r in idx.retrieve(q)] for q in _questions()]


def update_and_save(index: Path, n: int, seed: int) -> dict[str, Any]:
    import random

    from g2cons_plugins import G2ConSIndex

    mem = bench.PeakRSS()
    delta = max(1, n // 100)
    rows = list(corpus.passages(111 + bench.STREAM + delta, seed, start=n))
    drop = random.Random(seed).sample([f"g{i:08d}" for i in range(n)], delta)
    idx = G2ConSIndex.load(index)
    for part in (rows[:1], rows[1:11], rows[11:111]):
        idx.add(part)
    for row in rows[111 : 111 + bench.STREAM]:
        idx.add([row])
    idx.add(rows[111 + bench.STREAM :])
    idx.remove(drop)
    pending = idx.snapshot.pending
    out: dict[str, Any] = {
        "n_passages": n,
        "updates_logged": len(pending.ops) if pending is not None else 0,
        "peak_rss_updates_mb": mem.phase(),
        "rss_before_save_mb": round(mem.now() / 2**20, 1),
    }
    # a folder of ours beside the index (the same file system, so the log save can link its files)
    work = Path(tempfile.mkdtemp(prefix=f".{index.name}-saves-", dir=index.parent))
    log_path, whole_path = work / "log", work / "whole"
    out["log_save_s"] = bench._timed(idx.save, log_path)
    out["log_save_peak_rss_mb"] = mem.phase()
    out["log_save_refreshed"] = bool(idx.refreshed)
    out["log_version"] = json.loads((log_path / "CURRENT").read_text())["version"]
    expected = _results(idx)
    check = work / "expected.json"
    check.write_text(json.dumps(expected))
    res = subprocess.run(
        [sys.executable, __file__, "--job", "load", "--index", str(log_path), "--check", str(check)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-4000:])
    out.update(json.loads(res.stdout.strip().splitlines()[-1]))
    mem.phase()
    out["whole_refresh_s"] = bench._timed(idx.refresh)
    out["whole_refresh_peak_rss_mb"] = mem.phase()
    out["whole_save_s"] = bench._timed(idx.save, whole_path)
    out["whole_save_peak_rss_mb"] = mem.phase()
    shutil.rmtree(work)
    return out


def job_load(path: Path, check: Path) -> dict[str, Any]:
    from g2cons_plugins import G2ConSIndex

    mem = bench.PeakRSS()
    t0 = time.perf_counter()
    idx = G2ConSIndex.load(path)
    out: dict[str, Any] = {"load_s": round(time.perf_counter() - t0, 2), "load_peak_rss_mb": mem.phase()}
    expected = [[tuple(x) for x in q] for q in json.loads(check.read_text())]
    out["load_same_results"] = _results(idx) == expected
    out["load_refreshed"] = bool(idx.refreshed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--n", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--job", choices=("load",), help=argparse.SUPPRESS)
    ap.add_argument("--check", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.job == "load":
        print(json.dumps(job_load(args.index, args.check)))
        return
    out = update_and_save(args.index, args.n, args.seed)
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
