"""``g2cons`` command line: ``eval`` (benchmark), ``build``, ``query``, ``select``.

    g2cons eval --corpus C.jsonl --questions Q.jsonl --methods dense,bm25,keyword,concept,concept-paper \
        --budgets 2000,4000,12000 --embedder minilm --out results.json
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .config import G2ConSConfig
from .errors import G2ConSError, InputError


def _ints(s: str) -> list[int]:
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None
    if not out or any(x <= 0 for x in out):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {s!r}")
    return out


def _floats(s: str) -> list[float]:
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None


def _config(args: argparse.Namespace) -> G2ConSConfig:
    unit = None if args.unit_tokens == 0 else args.unit_tokens
    return G2ConSConfig(mode=args.mode, unit_tokens=unit)


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except ImportError:  # pragma: no cover - Windows
        return float("nan")


def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluation import (
        METHODS,
        evaluate_retrieval,
        format_table,
        load_questions,
        read_jsonl,
        selection_quality,
    )
    from .index import G2ConSIndex

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise InputError(f"unknown methods {bad}; choose from {list(METHODS)}")
    corpus: list[Any] = read_jsonl(args.corpus)
    if args.pack_tokens:
        from .chunks import make_chunks, pack_chunks
        from .text import get_tokenizer

        corpus = pack_chunks(make_chunks(corpus), args.pack_tokens, get_tokenizer())
    questions = load_questions(args.questions)
    if args.limit:
        questions = questions[: args.limit]
    t0 = time.perf_counter()
    index = G2ConSIndex.build(
        corpus,
        embedder=args.embedder,
        config=_config(args),
        cache_dir=args.cache_dir,
        show_progress=not args.quiet,
    )
    build_s = time.perf_counter() - t0
    print(index.stats, file=sys.stderr)
    results = evaluate_retrieval(index, questions, methods, args.budgets, show_progress=not args.quiet)
    out: dict[str, Any] = {
        "results": results,
        "settings": {
            "corpus": str(args.corpus),
            "pack_tokens": args.pack_tokens,
            "unit_tokens": args.unit_tokens,
            "questions": str(args.questions),
            "n_questions": len(questions),
            "embedder": index.embedder.name,
            "tokenizer": index.tokenizer.name,
            "config": index.config.to_dict(),
            "graph": index.stats.to_dict(),
            "build_seconds": round(build_s, 3),
            "build_timings": {k: round(v, 3) for k, v in index.timings.items()},
            "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
    }
    if args.selection:
        out["selection"] = selection_quality(index, questions, kappas=args.kappas)
    out["settings"]["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    print(format_table(results, ["method", "budget", "context_recall", "latency_ms_p50", "latency_ms_p95"]))
    if "selection" in out:
        print()
        print(
            format_table(
                out["selection"],
                [
                    "kappa",
                    "selector",
                    "answer_coverage",
                    "random_answer_mean",
                    "length_matched_answer_mean",
                    "length_matched_answer_std",
                ],
            )
        )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from .evaluation import read_jsonl
    from .index import G2ConSIndex

    index = G2ConSIndex.build(
        read_jsonl(args.corpus),
        embedder=args.embedder,
        config=_config(args),
        cache_dir=args.cache_dir,
        show_progress=not args.quiet,
    )
    index.save(args.graph)
    print(index.stats)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from .index import G2ConSIndex

    index = G2ConSIndex.load(args.graph)
    items = index.retrieve(args.question, beta=args.budget)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "unit_id": x.unit_id,
                        "chunk_id": x.parent_id,
                        "score": x.score,
                        "n_tokens": x.n_tokens,
                        "reason": x.reason,
                        "text": x.text,
                    }
                    for x in items
                ],
                indent=2,
            )
        )
    else:
        for x in items:
            print(f"[{x.parent_id}] {x.n_tokens} tok, score {x.score:.3f}, {x.reason.get('via')}: {x.text[:100]!r}")
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    from .index import G2ConSIndex

    index = G2ConSIndex.load(args.graph)
    rep = index.select(kappa=args.kappa, price_per_mtok=args.price_per_mtok)
    print(rep.summary())
    if args.out:
        Path(args.out).write_text(json.dumps(rep.to_dict(), indent=2), encoding="utf-8")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="g2cons", description="G2ConS concept graph for Graph-RAG (offline).")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp_: argparse.ArgumentParser) -> None:
        sp_.add_argument("--embedder", default="wordllama", help="wordllama | minilm | openai[:model] | hash")
        sp_.add_argument("--mode", default="default", choices=["default", "paper"])
        sp_.add_argument("--unit-tokens", type=int, default=150, help="retrieval unit size; 0 = whole chunks")
        sp_.add_argument("--cache-dir", default=None, help="embedding cache directory (reruns are cheap)")
        sp_.add_argument("--quiet", action="store_true", help="no progress bars")

    e = sub.add_parser("eval", help="Context Recall of several methods side by side")
    e.add_argument("--corpus", required=True, type=Path)
    e.add_argument("--questions", required=True, type=Path)
    e.add_argument("--methods", default="dense,bm25,keyword,concept,concept-paper")
    e.add_argument("--budgets", type=_ints, default=[2000, 4000, 12000])
    e.add_argument("--limit", type=int, default=0, help="only the first N questions (smoke runs)")
    e.add_argument("--out", type=Path, default=None)
    e.add_argument("--selection", action="store_true", help="also measure core-chunk selection vs random")
    e.add_argument("--kappas", type=_floats, default=[0.2, 0.8])
    e.add_argument("--pack-tokens", type=int, default=0,
                   help="first pack passages into chunks of this many tokens (MS GraphRAG: 1200); 0 = no packing")
    common(e)
    e.set_defaults(func=cmd_eval)

    b = sub.add_parser("build", help="build a concept graph from a JSONL corpus and save it")
    b.add_argument("corpus", type=Path)
    b.add_argument("--graph", required=True, type=Path)
    common(b)
    b.set_defaults(func=cmd_build)

    q = sub.add_parser("query", help="concept-path retrieval from a saved graph")
    q.add_argument("graph", type=Path)
    q.add_argument("question")
    q.add_argument("--budget", type=int, default=4000)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_query)

    s = sub.add_parser("select", help="core-chunk selection report from a saved graph")
    s.add_argument("graph", type=Path)
    s.add_argument("--kappa", type=float, default=0.8)
    s.add_argument("--price-per-mtok", type=float, default=0.15)
    s.add_argument("--out", type=Path, default=None)
    s.set_defaults(func=cmd_select)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        return int(args.func(args))
    except G2ConSError as e:
        print(f"g2cons: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
