"""Time and peak memory of each build stage, at several sizes, for the code here and (optionally) another tree.

Stages, in the order a build runs them (each timed alone, in a fresh process per size and tree):

- ``read``: the passages generated (:mod:`corpus`) and validated into chunks (``make_chunks``);
- ``split``: Punkt sentences, per-sentence token counts, units (``state._split``);
- ``sentences``: the distinct sentences and the sentence x unit matrix (``state._sentence_units``);
- ``count``: the token count of each chunk (``state._chunk_tokens``);
- ``embed``: the units and, where the config needs them, the sentences (wordllama);
- ``terms``: the per-sentence term counts (``terms.analyze``);
- ``derive``: vocabulary, incidences, concept vectors, edges, PageRank, names (``state.derive`` given the terms);
- ``unit_index``: the snapshot with its unit index (``make_snapshot`` given the derived state);
- ``save``: ``G2ConSIndex.save`` to a temporary folder (its size on disk is reported).

Peak memory of a stage: the process's peak resident set (``VmHWM``) with the peak reset before the stage
(``/proc/self/clear_refs``), so it is what the process held at most while that stage ran.

    nice -n 10 python benchmarks/scale/build_stages.py --sizes 2000 5000 10000 20000 \\
        --before /tmp/before_tree --out benchmarks/scale/results/build_stages.json

``--before DIR``: a folder holding an older ``g2cons_plugins`` (e.g. ``git archive COMMIT g2cons_plugins | tar -x
-C DIR``), run the same way in the same call so the two are measured on the same busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STAGES = ("read", "split", "sentences", "count", "embed", "terms", "derive", "unit_index", "save")


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


@contextmanager
def stage(name: str, out: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Time ``name`` and record the peak resident memory while it ran (MB)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # reset VmHWM to the current RSS
    except OSError:
        pass
    t0 = time.perf_counter()
    yield
    out[name] = {
        "s": round(time.perf_counter() - t0, 3),
        "peak_mb": round(_status_kb("VmHWM") / 1024, 1),
        "rss_after_mb": round(_status_kb("VmRSS") / 1024, 1),
    }


def run_one(n: int, embedder: str) -> dict[str, Any]:
    """Build ``n`` generated passages stage by stage in this process (see module doc)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(HERE))
    import corpus
    import numpy as np

    from g2cons_plugins import G2ConSConfig, G2ConSIndex
    from g2cons_plugins import build as state
    from g2cons_plugins.chunks import make_chunks
    from g2cons_plugins.concepts import analyze
    from g2cons_plugins.embedders import get_embedder
    from g2cons_plugins.snapshot import make_snapshot
    from g2cons_plugins.text import get_tokenizer

    try:
        from g2cons_plugins.storage.memory import after_build_step
    except ImportError:  # an older tree: the releases are lines inside its derive
        after_build_step = None

    config, tok = G2ConSConfig(), get_tokenizer("cl100k_base")
    emb = get_embedder(embedder)
    emb.embed(["warm up the embedder"])
    corpus.sentence_pool()  # the generator's pool of real sentences: made once, not part of a build
    st: dict[str, Any] = {}
    with stage("read", st):
        chunks = sorted(make_chunks(corpus.passages(n)), key=lambda c: c.id)
    with stage("split", st):
        units, parents = state._split(chunks, tok, config, False, None, None)
    with stage("sentences", st):
        sentences, sent_unit = state._sentence_units(units)
    with stage("count", st):
        try:
            chunk_tokens = state._chunk_tokens(chunks, tok, None, None, units)
        except TypeError:  # an older tree: no units to reuse
            chunk_tokens = state._chunk_tokens(chunks, tok, None, None)
    with stage("embed", st):
        unit_vecs = state._vectors(emb, [u.text for u in units], None, "units", False, None)
        sent_vecs = None
        if state.needs_sentence_vectors(config):
            sent_vecs = state._vectors(emb, list(sentences), None, "sentences", False, None)
    stored = state.Stored(
        chunks=chunks,
        chunk_tokens=chunk_tokens,
        units=units,
        unit_parent=np.asarray(parents, dtype=np.int64),
        unit_tokens=np.array([u.n_tokens for u in units], dtype=np.int64),
        sentences=sentences,
        sent_unit=sent_unit,
        sent_vecs=sent_vecs,
        unit_vecs=unit_vecs,
    )
    with stage("terms", st):
        terms = analyze(stored.sentences, config)
    with stage("derive", st):
        hook = {} if after_build_step is None else {"after_step": after_build_step}  # the index's memory hook
        derived = state.derive(stored, config, terms, **hook)
    with stage("unit_index", st):
        snap = make_snapshot(stored, emb, config, tok, derived)
    index = G2ConSIndex.from_snapshot(snap)
    with tempfile.TemporaryDirectory(prefix="g2cons-stages-") as tmp:
        with stage("save", st):
            index.save(Path(tmp) / "index")
        disk = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    import g2cons_plugins

    return {
        "code": str(Path(g2cons_plugins.__file__).parent),
        "n": n,
        "tokens": int(np.asarray(chunk_tokens).sum()),
        "chars": sum(len(c.text) for c in chunks),
        "units": len(units),
        "sentences": len(sentences),
        "disk_mb": round(disk / 2**20, 2),
        "peak_mb": round(_status_kb("VmHWM") / 1024, 1),
        "stages": st,
        "total_s": round(sum(v["s"] for v in st.values()), 3),
    }


def _child(tree: Path, n: int, embedder: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(n), "--embedder", embedder]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one row per tree and size, seconds (peak MB) per stage."""
    head = "| tree | passages | tokens | " + " | ".join(STAGES) + " | total s | disk MB |"
    lines = [head, "|" + "---|" * (len(STAGES) + 5)]
    for r in rows:
        cells = [f"{r['stages'][s]['s']:.2f} ({r['stages'][s]['peak_mb']:,.0f})" for s in STAGES]
        lines.append(
            f"| {r['tree']} | {r['n']:,} | {r['tokens']:,} | " + " | ".join(cells) + f" | {r['total_s']:.2f} | "
            f"{r['disk_mb']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--before", type=Path, default=None, help="a folder holding an older g2cons_plugins")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(run_one(args.child, args.embedder)))
        return
    trees = ([("before", args.before)] if args.before else []) + [("after", REPO)]
    rows = []
    for n in args.sizes:
        for name, tree in trees:  # the two trees in turn at each size: the same machine load for both
            r = {"tree": name, **_child(tree, n, args.embedder)}
            rows.append(r)
            print(f"{name} {n}: {r['total_s']:.1f} s, peak {r['peak_mb']:,.0f} MB", file=sys.stderr, flush=True)
    res = {"cpus": os.cpu_count(), "loadavg": os.getloadavg(), "embedder": args.embedder, "rows": rows}
    print(table(rows))
    if args.out:
        tmp = args.out.with_name(f".{args.out.name}.tmp")
        tmp.write_text(json.dumps(res, indent=1) + "\n")
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
