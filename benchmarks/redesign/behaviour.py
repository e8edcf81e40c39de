"""Record what the public API of ``g2cons_plugins`` returns on the four shared multi-hop sets, so that two versions
of the package (before and after a restructuring that must not change behaviour) can be compared exactly.

The script imports only the public API (``from g2cons_plugins import G2ConSIndex, G2ConSConfig, HostItem, fuse``)
and never a submodule, so the same file runs on the old and on the new module layout. For every question of
``musique/hipporag_train100``, ``musique/ketrag500``, ``2wikimultihopqa/ketrag500`` and ``hotpotqa/hipporag_train100``
(``../shared/data``) it records, into one JSON file per set (sorted keys, full id lists, scores rounded to 6 digits):

- ``retrieve``: the concept path of the default config and of ``mode="paper"`` at beta 1000 / 2000 / 4000:
  ``[unit_id, chunk_id, n_tokens, score]`` per retrieved unit, in order;
- ``strategies``: the default index's other strategies (``dense``, ``ppr``, ``e2``, and ``paper`` on the default
  graph) at beta 2000;
- ``hosts``: the host list of the question: the ids of the 10 passages sharing most distinct words with the question
  (plain Python here, independent of the package; ties by corpus order);
- ``fusion``: that host list fused with the concept path at beta 2000 and lambda 0.2 / 0.6 by every rule: ``share``
  (the default rule), ``score`` (an index with ``fusion="score"``), ``ensemble`` (an index with
  ``fusion="ensemble"``), ``paper`` (the paper-mode index: the ensemble with hard caps) and ``fuse_fn`` (the top-level
  ``fuse`` on the default concept path, spill on): ``[source, chunk_id, unit_id, n_tokens, score]`` per item, plus
  the report (host items given, contributed, dropped by reason, rule);

and per set:

- ``selection``: every selector of ``G2ConSConfig.selector`` (``coverage``, ``concept_coverage``, ``pagerank``,
  ``shortest``, ``uniform``, ``knn_pagerank``; seed 42 for the random one) at kappa 0.2 / 0.5 / 0.8 by tokens, the
  default selector by chunks, and the paper index's selector: the kept chunk ids in order plus the token counts;
- ``config`` (``to_dict()`` of each index's config) and ``graph`` (``index.stats``).

``meta`` (timings, the imported package's file, versions) is written but not compared.

Embedder: ``--embedder`` (default "wordllama", as recorded: a run with the quality embedder "minilm" did not fit the
time on the shared 2-core box, see benchmarks/redesign/README.md) behind the on-disk vector cache (``--cache-dir``),
so a second run and the after-run embed nothing but the questions. ``--jobs 4`` runs the four sets in four
processes.

Commands (from the repository root of the tree whose package is measured)::

    . /work/main/.venv-test/bin/activate; export HF_HUB_OFFLINE=1
    # before (this branch's package):
    PYTHONPATH=/work/wt-behaviour nice -n 10 python benchmarks/redesign/behaviour.py \\
        --out /work/behaviour-before --cache-dir /work/cache-behaviour --embedder wordllama --jobs 4 --gzip
    # after (the restructured package on main; the same script):
    PYTHONPATH=/work/main nice -n 10 python benchmarks/redesign/behaviour.py \\
        --out /work/behaviour-after --cache-dir /work/cache-behaviour --embedder wordllama --jobs 4 --gzip
    python benchmarks/redesign/compare.py /work/behaviour-before /work/behaviour-after

The script prints which ``g2cons_plugins`` it imported; ``--expect-root`` makes it stop when that is not the tree
meant to be measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import g2cons_plugins
from g2cons_plugins import G2ConSConfig, G2ConSIndex, HostItem, fuse

SETS = ("musique/hipporag_train100", "musique/ketrag500", "2wikimultihopqa/ketrag500", "hotpotqa/hipporag_train100")
BUDGETS = (1000, 2000, 4000)
FUSION_BETA = 2000
LAMBDAS = (0.2, 0.6)
KAPPAS = (0.2, 0.5, 0.8)
# the selectors of G2ConSConfig.selector when the before-side was recorded; the config's own list is recorded too
SELECTORS = ("coverage", "concept_coverage", "pagerank", "shortest", "uniform", "knn_pagerank")
OTHER_STRATEGIES = ("dense", "ppr", "e2", "paper")
SEED = 42
N_HOSTS = 10
DIGITS = 6

_WORD = re.compile(r"\w+")
# a short fixed stop list for the host's word overlap (part of this script, not the package's)
_STOP_WORDS = (
    "a an the of in on at to for from by with and or but is are was were be been being as it its this that these "
    "those which who whom whose what when where why how did do does done has have had not no than then there their "
    "they he she his her him i you we our your my me us them into about after before over under between during "
    "also same both other one two first last"
)
_STOP = frozenset(_STOP_WORDS.split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file (error names the file and line)."""
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{path}:{n}: not JSON ({e})") from None
    return rows


class WordHost:
    """A deterministic host retriever in plain Python: passages ranked by the number of distinct non-stop words they
    share with the question (title + text), ties by corpus order; passages sharing no word are never returned."""

    def __init__(self, corpus: Sequence[dict[str, Any]]) -> None:
        self.ids = [str(r["id"]) for r in corpus]
        self.texts = [r["text"] for r in corpus]
        self.postings: dict[str, list[int]] = {}
        for pos, r in enumerate(corpus):
            for w in _words(f"{r.get('title') or ''} {r['text']}"):
                self.postings.setdefault(w, []).append(pos)

    def ranked(self, question: str, n: int = N_HOSTS) -> list[int]:
        counts: dict[int, int] = {}
        for w in _words(question):
            for pos in self.postings.get(w, ()):
                counts[pos] = counts.get(pos, 0) + 1
        return sorted(counts, key=lambda p: (-counts[p], p))[:n]

    def items(self, positions: Sequence[int], question: str) -> list[HostItem]:
        q = _words(question)
        return [
            HostItem(chunk_id=self.ids[p], text=self.texts[p], score=float(len(q & _words(self.texts[p]))))
            for p in positions
        ]


def _r(x: float) -> float:
    return round(float(x), DIGITS)


def retrieved(items: Sequence[Any]) -> list[list[Any]]:
    """``[unit_id, chunk_id, n_tokens, score]`` per retrieved unit."""
    return [[it.unit_id, it.chunk_id, int(it.n_tokens), _r(it.score)] for it in items]


def fused(items: Sequence[Any]) -> list[list[Any]]:
    """``[source, chunk_id, unit_id, n_tokens, score]`` per fused item."""
    return [[f.source, f.chunk_id, f.unit_id, int(f.n_tokens), _r(f.score)] for f in items]


def report(rep: Any) -> dict[str, Any]:
    """A fusion report as plain values."""
    return {
        "items": fused(rep.items),
        "host_items": int(rep.host_items),
        "contributed": int(rep.contributed),
        "dropped": {str(k): int(v) for k, v in sorted(rep.dropped.items())},
        "dropped_examples": {str(k): [str(x) for x in v] for k, v in sorted(rep.dropped_examples.items())},
        "rule": str(rep.rule),
    }


def selection(rep: Any) -> dict[str, Any]:
    """A selection report: kept ids in order and the token counts."""
    return {
        "kept_ids": list(rep.kept_ids),
        "n_dropped": len(rep.dropped_ids),
        "kept_tokens": int(rep.kept_tokens),
        "dropped_tokens": int(rep.dropped_tokens),
        "total_tokens": int(rep.total_tokens),
        "selector": str(rep.selector),
    }


def config_selectors() -> list[str]:
    """The selectors ``G2ConSConfig.selector`` allows, read from its type hint (public: the dataclass's annotation)."""
    import typing

    try:
        hint = typing.get_type_hints(G2ConSConfig)["selector"]
        return [str(a) for a in typing.get_args(hint)]
    except Exception as e:  # noqa: BLE001 - recorded, not fatal: the fixed list above is what is run
        return [f"unreadable: {type(e).__name__}: {e}"]


def run_set(name: str, data: Path, embedder: str, cache_dir: Path | None, limit: int | None) -> dict[str, Any]:
    """Everything recorded for one set."""
    t_start = time.perf_counter()
    corpus = read_jsonl(data / f"{name}_corpus.jsonl")
    questions = read_jsonl(data / f"{name}_questions.jsonl")
    if limit is not None:
        questions = questions[:limit]
    chunks = [{"id": str(r["id"]), "text": r["text"], "title": r.get("title")} for r in corpus]
    timings: dict[str, float] = {}

    def build(label: str, config: G2ConSConfig) -> G2ConSIndex:
        t = time.perf_counter()
        idx = G2ConSIndex.build(chunks, embedder=embedder, config=config, cache_dir=cache_dir)
        timings[f"build_{label}"] = round(time.perf_counter() - t, 2)
        return idx

    indexes = {
        "default": build("default", G2ConSConfig()),
        "paper": build("paper", G2ConSConfig(mode="paper")),
        "score": build("score", G2ConSConfig(fusion="score")),
        "ensemble": build("ensemble", G2ConSConfig(fusion="ensemble")),
    }
    default, paper = indexes["default"], indexes["paper"]
    host = WordHost(corpus)

    sections: dict[str, Any] = {
        "api": {"all": sorted(g2cons_plugins.__all__), "config_selectors": config_selectors()},
        "config": {k: v.config.to_dict() for k, v in indexes.items()},
        "graph": {k: v.stats.to_dict() for k, v in indexes.items()},
        "retrieve": {},
        "strategies": {},
        "hosts": {},
        "fusion": {},
        "selection": {},
    }

    t = time.perf_counter()
    for q in questions:
        qid, text = str(q["id"]), q["question"]
        sections["retrieve"][qid] = {
            mode: {str(b): retrieved(idx.retrieve(text, beta=b)) for b in BUDGETS}
            for mode, idx in (("default", default), ("paper", paper))
        }
    timings["retrieve"] = round(time.perf_counter() - t, 2)

    t = time.perf_counter()
    for q in questions:
        qid, text = str(q["id"]), q["question"]
        sections["strategies"][qid] = {
            s: retrieved(default.retrieve(text, beta=FUSION_BETA, strategy=s)) for s in OTHER_STRATEGIES
        }
    timings["strategies"] = round(time.perf_counter() - t, 2)

    t = time.perf_counter()
    for q in questions:
        qid, text = str(q["id"]), q["question"]
        positions = host.ranked(text)
        sections["hosts"][qid] = [host.ids[p] for p in positions]
        items = host.items(positions, text)
        concept = default.retrieve(text, beta=FUSION_BETA)
        per: dict[str, Any] = {}
        for lam in LAMBDAS:
            for rule, idx in (("share", default), ("score", indexes["score"]), ("ensemble", indexes["ensemble"]),
                              ("paper", paper)):  # fmt: skip
                per[f"{rule}@{lam}"] = report(idx.fuse_report(items, text, beta=FUSION_BETA, lambda_=lam))
            per[f"fuse_fn@{lam}"] = {
                "items": fused(fuse(items, concept, FUSION_BETA, lambda_=lam, tokenizer=default.tokenizer, spill=True))
            }
        # the config's own lambda (None: the mode's default) through the public fuse()
        per["share@config"] = {"items": fused(default.fuse(items, text, beta=FUSION_BETA))}
        per["paper@config"] = {"items": fused(paper.fuse(items, text, beta=FUSION_BETA))}
        sections["fusion"][qid] = per
    timings["fusion"] = round(time.perf_counter() - t, 2)

    t = time.perf_counter()
    sel = sections["selection"]
    for s in SELECTORS:
        for kappa in KAPPAS:
            sel[f"{s}@{kappa}"] = selection(default.select(kappa=kappa, selector=s, seed=SEED))
    for kappa in KAPPAS:
        sel[f"default_by_chunks@{kappa}"] = selection(default.select(kappa=kappa, kappa_by="chunks"))
        sel[f"paper_index@{kappa}"] = selection(paper.select(kappa=kappa))
    sel["default@config"] = selection(default.select())
    timings["selection"] = round(time.perf_counter() - t, 2)
    timings["total"] = round(time.perf_counter() - t_start, 2)

    return {
        "set": name,
        "sections": sections,
        "meta": {
            "n_questions": len(questions),
            "n_passages": len(corpus),
            "embedder": default.embedder.name,
            "timings_s": timings,
        },
    }


def write_json(path: Path, obj: Any, compress: bool = False) -> None:
    """Write ``obj`` as JSON with sorted keys, atomically (temp file + rename); gzip without a timestamp."""
    data = (json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    if compress:
        data = gzip.compress(data, compresslevel=9, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def set_file(name: str) -> str:
    """The output file name of a set: ``musique/ketrag500`` -> ``musique__ketrag500.json``."""
    return name.replace("/", "__") + ".json"


def _one(name: str, data: Path, embedder: str, cache_dir: Path | None, limit: int | None, out: Path,
         compress: bool) -> dict[str, Any]:  # fmt: skip
    """Run one set and write its file; returns its meta (a worker of ``--jobs``)."""
    result = run_set(name, data, embedder, cache_dir, limit)
    file = set_file(name) + (".gz" if compress else "")
    write_json(out / file, result, compress=compress)
    print(f"{name}: {result['meta']['n_questions']} questions, timings {result['meta']['timings_s']}", flush=True)
    return {"file": file, **result["meta"]}


def main(argv: Sequence[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="folder for one JSON per set (created)")
    ap.add_argument("--data", type=Path, default=root.parent / "shared" / "data", help="the shared data folder")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated set prefixes (default: the four)")
    ap.add_argument("--embedder", default="wordllama", help="embedder name (default wordllama, as recorded)")
    ap.add_argument("--cache-dir", type=Path, default=root / "benchmarks" / "cache", help="on-disk vector cache")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions per set (a smoke run)")
    ap.add_argument("--jobs", type=int, default=1, help="sets run at once, one process each (default 1)")
    ap.add_argument("--gzip", action="store_true", help="write .json.gz (gzip without timestamp) instead of .json")
    ap.add_argument("--expect-root", type=Path, default=None,
                    help="stop unless g2cons_plugins is imported from this tree (e.g. /work/main)")  # fmt: skip
    args = ap.parse_args(argv)

    pkg = Path(g2cons_plugins.__file__).resolve().parent
    print(f"g2cons_plugins {getattr(g2cons_plugins, '__version__', '?')} from {pkg}", flush=True)
    if args.expect_root is not None and pkg.parent != args.expect_root.resolve():
        print(f"error: expected g2cons_plugins under {args.expect_root}, imported {pkg}", file=sys.stderr)
        return 2
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    for s in sets:
        for kind in ("corpus", "questions"):
            if not (args.data / f"{s}_{kind}.jsonl").is_file():
                print(f"error: --sets {s!r}: no {args.data / f'{s}_{kind}.jsonl'}", file=sys.stderr)
                return 2
    summary: dict[str, Any] = {
        "package": str(pkg),
        "version": getattr(g2cons_plugins, "__version__", None),
        "python": platform.python_version(),
        "embedder": args.embedder,
        "sets": {},
    }
    job_args = [(s, args.data, args.embedder, args.cache_dir, args.limit, args.out, args.gzip) for s in sets]
    if args.jobs <= 1:
        for a in job_args:
            print(f"{a[0]} ...", flush=True)
            summary["sets"][a[0]] = _one(*a)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
            futures = {a[0]: pool.submit(_one, *a) for a in job_args}
            for name, fut in futures.items():
                summary["sets"][name] = fut.result()
    write_json(args.out / "summary.json", summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
