"""Trickle updates: seconds of an exact vs a trickle add / remove, and the drift of CR before refresh().

    # speed: synthetic corpora (corpus.py, as bench.py makes them), wordllama
    nice -n 10 python benchmarks/scale/trickle.py speed --sizes 10000,100000 --embedder wordllama \\
        --out benchmarks/scale/results/trickle_speed_wordllama.json
    # drift: MuSiQue ketrag500, minilm vectors from the cache
    nice -n 10 python benchmarks/scale/trickle.py drift --embedder minilm --cache-dir /tmp/dp/cache \\
        --out benchmarks/scale/results/trickle_drift_musique_minilm.json

``speed``: per size, build on n passages, then from that same snapshot each operation twice, ``exact=False``
(trickle, run first so the embedder's text cache favours the exact run, if anything) and ``exact=True`` (the
full re-derive every update made before): add the next 1, 10 and 100 passages of the stream, remove 1% of the
passages (seeded). A trickle from a just-built snapshot includes starting its trickle state (one pass over the
sentences and words; ``trickle_start_s``); ``add 1 (chained)`` is a trickle add right after another one, and
``refresh`` the refresh after the chain. Each size runs in a fresh process.

``drift``: build on 90% of the passages (seeded shuffle), trickle-add the other 10% in batches of 10
(``exact=False``: no automatic refresh), then CR of the concept path (default ``retrieve``) at 1k / 2k / 4k
tokens against a fresh build on all passages and after ``refresh()``; also the graph statistics of each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

BUDGETS = (1000, 2000, 4000)


def _timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t0, 3)


def job_speed(n: int, embedder: str, seed: int) -> dict[str, Any]:
    """Exact vs trickle seconds of each operation from one built snapshot of ``n`` passages."""
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.chunks import make_chunks
    from g2cons_plugins.engine.snapshot_updates import refreshed, with_added, with_removed
    from g2cons_plugins.engine.update import Pending

    rows = list(corpus.passages(n + 101, seed))
    idx, build_s = _timed(lambda: G2ConSIndex.build(rows[:n], embedder=embedder))
    snap = idx.snapshot
    out: dict[str, Any] = {"n_passages": n, "embedder": embedder, "build_s": build_s, "ops": []}
    out["graph"] = snap.stats.to_dict()
    _, out["trickle_start_s"] = _timed(lambda: Pending.start(snap.stored, snap.derived))
    drop = random.Random(seed).sample([r["id"] for r in rows[:n]], max(1, n // 100))
    ops = {
        "add 1": lambda ex: with_added(snap, make_chunks(rows[n : n + 1]), exact=ex),
        "add 10": lambda ex: with_added(snap, make_chunks(rows[n : n + 10]), exact=ex),
        "add 100": lambda ex: with_added(snap, make_chunks(rows[n : n + 100]), exact=ex),
        "remove 1%": lambda ex: with_removed(snap, drop, exact=ex),
    }
    for name, op in ops.items():
        _, trickle_s = _timed(lambda op=op: op(False))
        _, exact_s = _timed(lambda op=op: op(True))
        out["ops"].append({"op": name, "exact_s": exact_s, "trickle_s": trickle_s})
        print(json.dumps(out["ops"][-1]), file=sys.stderr, flush=True)
    first = with_added(snap, make_chunks(rows[n : n + 1]), exact=False)
    chained, chained_s = _timed(lambda: with_added(first, make_chunks(rows[n + 1 : n + 2]), exact=False))
    out["ops"].append({"op": "add 1 (chained)", "exact_s": None, "trickle_s": chained_s})
    _, out["refresh_s"] = _timed(lambda: refreshed(chained))
    return out


def job_drift(args: argparse.Namespace) -> dict[str, Any]:
    """CR of a 90% build trickled to 100% vs a fresh build and vs after refresh()."""
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.embedders import CachedEmbedder, get_embedder
    from g2cons_plugins.eval.evaluation import load_questions, read_jsonl

    rows = read_jsonl(args.corpus)
    docs = [{"id": r["id"], "text": f"{r.get('title') or ''}\n{r['text']}".strip()} for r in rows]
    questions = load_questions(args.questions)
    emb = CachedEmbedder(get_embedder(args.embedder), cache_dir=args.cache_dir)
    order = list(range(len(docs)))
    random.Random(args.seed).shuffle(order)
    cut = int(0.9 * len(docs))
    base, rest = [docs[i] for i in order[:cut]], [docs[i] for i in order[cut:]]
    fresh, fresh_s = _timed(lambda: G2ConSIndex.build(docs, embedder=emb))
    if args.defer:  # the concept-graph update of small adds waits, here on any corpus size (update.Deferred)
        from g2cons_plugins.engine import update

        update.DEFER_MIN_CHUNKS, update.DEFER_CHUNKS = 0, args.defer
    idx = G2ConSIndex.build(base, embedder=emb)
    t0 = time.perf_counter()
    for s in range(0, len(rest), args.batch):
        idx.add(rest[s : s + args.batch], exact=False)
    trickle_s = round(time.perf_counter() - t0, 2)
    out: dict[str, Any] = {
        "n_passages": len(docs),
        "n_base": cut,
        "n_added": len(rest),
        "batch": args.batch,
        "n_batches": -(-len(rest) // args.batch),
        "fresh_build_s": fresh_s,
        "trickle_adds_s": trickle_s,
        "defer_chunks": args.defer,
        "waiting_chunks": 0 if idx.snapshot.pending is None or idx.snapshot.pending.deferred is None
        else int(idx.snapshot.pending.deferred.chunks.shape[0]),
        "graph": {"fresh": fresh.stats.to_dict(), "trickled": idx.stats.to_dict()},
    }
    cr: dict[str, Any] = {"fresh": _cr(fresh, questions), "trickled": _cr(idx, questions)}
    _, out["refresh_s"] = _timed(idx.refresh)
    out["graph"]["refreshed"] = idx.stats.to_dict()
    cr["refreshed"] = _cr(idx, questions)
    out["cr"] = cr
    return out


def _cr(index: Any, questions: list[dict[str, Any]]) -> dict[str, float]:
    from g2cons_plugins.eval.evaluation import evaluate_retrieval

    res = evaluate_retrieval(index, questions, ["concept"], list(BUDGETS))
    return {str(r["budget"]): r["context_recall"] for r in res}


def _meta() -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "command": " ".join(["python", *sys.argv]),
    }


def markdown(speed: list[dict[str, Any]]) -> str:
    """The speed table: seconds exact vs trickle per operation and size."""
    lines = [
        "| passages | build s | operation | exact s | trickle s | exact / build | trickle / build |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in speed:
        for o in r["ops"]:
            ex, b = o["exact_s"], r["build_s"]
            exact = "- | -" if ex is None else f"{ex:.2f} | {ex / b:.1%}"
            ex_s, ex_share = exact.split(" | ")
            lines.append(
                f"| {r['n_passages']:,} | {b:.1f} | {o['op']} | {ex_s} | {o['trickle_s']:.2f} | {ex_share} | "
                f"{o['trickle_s'] / b:.1%} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("speed", "drift", "_speed_job"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--corpus", default=str(corpus.DATA / "musique/ketrag500_corpus.jsonl"))
    ap.add_argument("--questions", default=str(corpus.DATA / "musique/ketrag500_questions.jsonl"))
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--defer", type=int, default=0, help="drift: added chunks whose graph update may wait (0: none)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.what == "_speed_job":
        print(json.dumps(job_speed(args.n, args.embedder, args.seed)))
        return
    if args.what == "speed":
        rows = []
        for n in (int(x) for x in args.sizes.split(",")):
            cmd = [sys.executable, __file__, "_speed_job", "--n", str(n), "--embedder", args.embedder]
            res = subprocess.run([*cmd, "--seed", str(args.seed)], capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(res.stderr[-4000:])
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
            rows[-1]["loadavg_1min_after"] = round(os.getloadavg()[0], 2)
        result: dict[str, Any] = {"meta": _meta(), "speed": rows}
        table = markdown(rows)
        print(table)
    else:
        result = {"meta": _meta(), "drift": job_drift(args)}
        print(json.dumps(result["drift"]["cr"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        if args.what == "speed":
            args.out.with_suffix(".md").write_text(
                f"Trickle vs exact updates ({result['meta']['cpus']} CPUs, commit {result['meta']['commit']}, "
                f"{result['meta']['date']}); command: `{result['meta']['command']}`\n\n{table}",
                encoding="utf-8",
            )


if __name__ == "__main__":
    main()
