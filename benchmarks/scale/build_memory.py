"""Peak resident memory of each stage of a streaming build and its save, at ``--n`` generated passages (given as a
generator), in one process: the chunk spool, the split / count / embed pass (``stream_store``), each derive step
(the engine's hooks, as ``G2ConSIndex.build`` passes them), the unit index, and each file of the save (the stored
columns, the derived state, the BM25 weights). A stage is labelled by wrapping the function that runs it; the peak
of each label is exact (``VmHWM`` reset through ``/proc/self/clear_refs`` at each change), and the resident set
after it is split into anonymous and file-backed pages (clean maps of the index's own columns, which the kernel can
drop). Linux only.

    nice -n 5 python benchmarks/scale/build_memory.py --n 1000000 --out benchmarks/scale/results/build_memory_1m.json

``G2CONS_TREE=DIR`` imports ``g2cons_plugins`` from another code tree (e.g. ``git archive <commit> g2cons_plugins``)
to measure an older commit with this script.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, os.environ.get("G2CONS_TREE") or str(HERE.parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import corpus  # noqa: E402


def _mb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return 0


class Stages:
    """The current stage's label; the peak resident set of each label, and the resident set after it."""

    def __init__(self) -> None:
        self.label, self.t0 = "start", time.perf_counter()
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._since = self.t0

    def set(self, name: str) -> None:
        with self._lock:
            now = time.perf_counter()
            self.rows.append({
                "stage": self.label, "s": round(now - self._since, 2), "peak_mb": _mb("VmHWM"),
                "after_mb": _mb("VmRSS"), "anon_after_mb": _mb("RssAnon"), "file_after_mb": _mb("RssFile"),
            })
            print(self.rows[-1], flush=True)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.label, self._since = name, now

    def wrap(self, module: str, attr: str, name: str) -> None:
        """Label the calls of ``module.attr`` as ``name`` (back to the caller's label afterwards)."""
        mod = importlib.import_module(module)
        owner_name, _, fn_name = attr.rpartition(".")
        owner = getattr(mod, owner_name) if owner_name else mod
        raw = owner.__dict__[fn_name] if owner_name else getattr(owner, fn_name)
        fn = raw.__func__ if isinstance(raw, classmethod) else raw

        @functools.wraps(fn)
        def labelled(*a: Any, **k: Any) -> Any:
            outer = self.label
            self.set(name)
            try:
                return fn(*a, **k)
            finally:
                self.set(outer if outer.endswith(" (cont.)") else outer + " (cont.)")

        setattr(owner, fn_name, classmethod(labelled) if isinstance(raw, classmethod) else labelled)


def run(n: int, embedder: str) -> dict[str, Any]:
    from g2cons_plugins import G2ConSConfig, G2ConSIndex
    from g2cons_plugins.embedders import get_embedder
    from g2cons_plugins.embedders.cache import CachedEmbedder
    from g2cons_plugins.engine.streaming import spool_chunks, stream_store
    from g2cons_plugins.snapshot import make_snapshot
    from g2cons_plugins.storage.memory import after_build_step
    from g2cons_plugins.storage.step_spill import SpillSteps
    from g2cons_plugins.text import get_tokenizer

    stages = Stages()
    for module, attr, name in (
        ("g2cons_plugins.storage.persistence", "write_stored_npz", "save: stored columns"),
        ("g2cons_plugins.storage.persistence", "write_derived", "save: derived state"),
        ("g2cons_plugins.storage.persistence", "write_lexical", "save: BM25 file"),
        ("g2cons_plugins.retrieval.lexical", "LexicalIndex.build", "save: BM25 weights"),
        ("g2cons_plugins.snapshot", "unit_index_for", "unit index"),
    ):
        stages.wrap(module, attr, name)
    config, tok = G2ConSConfig(), get_tokenizer("cl100k_base")
    emb = CachedEmbedder(get_embedder(embedder))
    emb.embed(["warm"])
    corpus.sentence_pool()
    stages.set("spool chunks")
    table = spool_chunks(corpus.passages(n))
    stages.set("split, count, embed")
    st = stream_store(table, emb, tok, config)
    stages.set("derive: concepts (+ bridge names thread)")

    def hook(step: str) -> None:
        after_build_step(step)
        stages.set(f"derive: after {step}")

    snap = make_snapshot(st, emb, config, tok, after_step=hook, keep=SpillSteps(st))
    stages.set("save")
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        G2ConSIndex.from_snapshot(snap).save(Path(tmp) / "index")
        stages.set("end")
    return {
        "n_passages": n,
        "embedder": embedder,
        "stages": stages.rows,
        "peak_mb": max(r["peak_mb"] for r in stages.rows),
        "timings": dict(st.timings),
        "total_s": round(time.perf_counter() - stages.t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    out = run(args.n, args.embedder)
    print(f"peak {out['peak_mb']:,} MB")
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
