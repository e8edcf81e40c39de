"""``g2cons`` command line: ``eval`` (benchmark), ``build``, ``select``, ``query``, ``fuse``, ``add``, ``remove``.

    g2cons eval --corpus C.jsonl --questions Q.jsonl --methods dense,bm25,keyword,concept,concept-paper \
        --budgets 2000,4000,12000 --embedder minilm --out results.json
    g2cons select ragtest/input --kappa 0.8 --out ragtest/input_core     # MS GraphRAG input folder -> core folder
    g2cons build docs.csv --graph g/ ; g2cons query g/ "question" --budget 4000 --json
    g2cons fuse g/ "question" --host host.json ; g2cons add g/ new.txt ; g2cons remove g/ old.txt

Reading, chunking and writing the host's input formats live in :mod:`g2cons_plugins.corpus_io`.
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
        RESULT_COLUMNS,
        SELECTION_COLUMNS,
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
    extra = _eval_host(args, index, questions, out) if args.host else {}
    if args.answer_model:
        _eval_answers(args, index, questions, out, extra)
    out["settings"]["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    print(format_table(results, RESULT_COLUMNS))
    if "selection" in out:
        print()
        print(format_table(out["selection"], SELECTION_COLUMNS))
    if "host" in out:
        from .host_eval import HOST_BUILD_COLUMNS
        from .report import host_pivot

        print(f"\n{out['host']['host']['label']}\n")
        print(format_table(out["host"]["builds"], HOST_BUILD_COLUMNS))
        print()
        print(format_table(*host_pivot(out["host"])))
    if "answers" in out:
        print()
        print(format_table(out["answers"]["rows"], ("method", "budget", "em", "f1", "n")))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2), encoding="utf-8")
    if args.report:
        from .report import write_report

        path = write_report(out, Path(args.report), command="g2cons " + " ".join(sys.argv[1:]))
        print(f"report: {path}", file=sys.stderr)
    return 0


def _eval_host(
    args: argparse.Namespace, index: Any, questions: list[dict[str, Any]], out: dict[str, Any]
) -> dict[tuple[str, int], list[str]]:
    """Host KG and fused G2ConS (``--host``): the kappa x lambda sweep, and host/fused rows in the main table.
    Returns the host and fused contexts of the main setting (for EM/F1)."""
    from .host_eval import evaluate_host
    from .hosts import load_host

    kappas = sorted(set(args.host_kappas) | {args.host_kappa})
    lam = index.config.fusion_lambda if args.lambda_ is None else args.lambda_
    spill = index.config.fusion_spill if args.spill is None else args.spill
    lambdas = sorted(set(args.lambdas) | {lam})
    host = load_host(args.host)
    res = evaluate_host(
        index,
        questions,
        host,
        kappas,
        lambdas,
        args.budgets,
        price_in_per_mtok=args.price_in,
        price_out_per_mtok=args.price_out,
        show_progress=not args.quiet,
        keep=(args.host_kappa, lam, spill),
    )
    contexts = res.pop("contexts")
    res["main"] = {"kappa": args.host_kappa, "lambda": lam, "spill": spill}
    out["host"] = res
    for r in res["sweep"]:
        if r["kappa"] != args.host_kappa:
            continue
        if r["method"] == "host" or (r["lambda"] == lam and r["spill"] == spill):
            row = {k: v for k, v in r.items() if k not in ("kappa", "lambda", "spill", "method")}
            row["method"] = "host-kg" if r["method"] == "host" else "fused"
            out["results"].append(row)
    out["settings"]["host"] = {"name": host.name, "label": host.label, **res["main"]}
    return contexts


def _eval_answers(
    args: argparse.Namespace,
    index: Any,
    questions: list[dict[str, Any]],
    out: dict[str, Any],
    extra: dict[tuple[str, int], list[str]],
) -> None:
    """EM/F1 of an answering LLM on each method's context at one budget (``--answer-model``); with ``--host``
    also on the host-KG and fused contexts of the main setting."""
    from .answering import Answerer, evaluate_answers
    from .evaluation import method_contexts

    beta = args.answer_budget or min(args.budgets)
    answerer = Answerer(model=args.answer_model)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    contexts = method_contexts(index, questions, methods, beta)
    contexts.update({m: c for (m, b), c in extra.items() if b == beta})
    rows = [
        {"method": method, "budget": beta, **evaluate_answers(answerer, questions, ctx)}
        for method, ctx in contexts.items()
    ]
    out["answers"] = {"model": args.answer_model, "budget": beta, "rows": rows}


# ---------------------------------------------------------------------------------------------- input helpers
SIDECAR = "g2cons_input.json"  # chunking settings of a graph built from the CLI (read back by ``add``)


def _show(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False)


def _info(args: argparse.Namespace, msg: str) -> None:
    if _show(args):
        print(msg, file=sys.stderr)


def _embedder(args: argparse.Namespace) -> Any:
    from .embedders import get_embedder

    spec = args.embedder
    if spec.strip().lower() == "minilm" and _show(args):
        return get_embedder(spec, show_progress=True)
    return get_embedder(spec)


def _read_input(args: argparse.Namespace, path: Path) -> Any:
    from .corpus_io import read_corpus

    _info(args, f"reading {path}")
    return read_corpus(
        path,
        text_column=args.text_column,
        encoding=args.encoding,
        skip_empty=args.skip_empty,
        show_progress=_show(args),
    )


def _chunk(args: argparse.Namespace, docs: Sequence[Any], chunk_tokens: int, chunk_overlap: int) -> list[Any]:
    from .corpus_io import chunk_documents

    return chunk_documents(docs, chunk_tokens, chunk_overlap, show_progress=_show(args) and len(docs) > 50)


def _chunking(args: argparse.Namespace, saved: dict[str, Any] | None = None) -> tuple[int, int]:
    from .corpus_io import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_TOKENS, check_chunking

    saved = saved or {}
    size = args.chunk_tokens if args.chunk_tokens is not None else saved.get("chunk_tokens", DEFAULT_CHUNK_TOKENS)
    overlap = (
        args.chunk_overlap if args.chunk_overlap is not None else saved.get("chunk_overlap", DEFAULT_CHUNK_OVERLAP)
    )
    check_chunking(int(size), int(overlap))
    return int(size), int(overlap)


def _is_index_dir(path: Path) -> bool:
    return path.is_dir() and (path / "manifest.json").is_file()


def _check_graph_dir(path: Path) -> None:
    """Fail before any work when ``path`` cannot take a saved index."""
    from .corpus_io import _check_writable

    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: exists and is not a folder; --graph needs a folder")
    if path.is_dir() and any(path.iterdir()) and not _is_index_dir(path):
        raise InputError(f"{path}: non-empty folder that is not a g2cons graph; choose another --graph")
    _check_writable(path.parent)


def _save_graph(index: Any, path: Path, settings: dict[str, Any]) -> None:
    index.save(path)
    (path / SIDECAR).write_text(json.dumps(settings, indent=2), encoding="utf-8")


def _read_sidecar(path: Path) -> dict[str, Any]:
    try:
        data = json.loads((path / SIDECAR).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _build_index(args: argparse.Namespace, chunks: list[Any]) -> Any:
    from .index import G2ConSIndex

    _info(args, f"building the concept graph over {len(chunks):,} chunks (embedder {args.embedder})")
    return G2ConSIndex.build(
        chunks, embedder=_embedder(args), config=_config(args), cache_dir=args.cache_dir, show_progress=_show(args)
    )


# ---------------------------------------------------------------------------------------------- build
def cmd_build(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    _check_graph_dir(args.graph)
    size, overlap = _chunking(args)
    corpus = _read_input(args, args.input)
    chunks = _chunk(args, corpus.documents, size, overlap)
    index = _build_index(args, chunks)
    settings = {
        "input": str(args.input),
        "kind": corpus.kind,
        "chunk_tokens": size,
        "chunk_overlap": overlap,
        "text_column": args.text_column,
        "encoding": args.encoding,
    }
    _save_graph(index, args.graph, settings)
    print(index.stats)
    print(
        f"{len(corpus.documents):,} documents -> {len(chunks):,} chunks; graph saved to {args.graph} "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    return 0


# ---------------------------------------------------------------------------------------------- query
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


# ---------------------------------------------------------------------------------------------- select
def _select_saved_graph(args: argparse.Namespace) -> int:
    """The original form: ``g2cons select GRAPH_DIR [--out report.json]`` on a saved graph."""
    from .index import G2ConSIndex

    index = G2ConSIndex.load(args.input)
    rep = index.select(
        kappa=args.kappa,
        kappa_by=args.kappa_by,
        selector=args.selector,
        price_per_mtok=args.price_per_mtok,
        prompt_tokens_per_call=args.prompt_tokens_per_call,
    )
    print(rep.summary())
    if args.out and not args.dry_run:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rep.to_dict(), indent=2), encoding="utf-8")
    return 0


def _summary(report: dict[str, Any]) -> str:
    n = report["n_kept"] + report["n_dropped"]
    total = max(report["total_tokens"], 1)
    lines = [
        f"input    {report['input']} ({report['kind']}, {report['n_documents']:,} documents) -> {n:,} chunks "
        f"(<= {report['chunk_tokens']} tokens, overlap {report['chunk_overlap']})",
        f"kept     {report['n_kept']:>8,} chunks {report['kept_tokens']:>12,} tokens "
        f"({report['kept_tokens'] / total:.1%})",
        f"dropped  {report['n_dropped']:>8,} chunks {report['dropped_tokens']:>12,} tokens "
        f"({report['dropped_tokens'] / total:.1%})",
        f"LLM calls (one extraction call per chunk): {n:,} -> {report['n_kept']:,}, "
        f"{report['calls_avoided']:,} avoided; "
        f"{report['input_tokens_avoided']:,} input tokens avoided = ${report['usd_avoided']:.4f} saved "
        f"at ${report['price_per_mtok']}/1M tokens",
        f"selector {report['selector']}, kappa {report['kappa']} by {report['kappa_by']}; {report['seconds']:.1f} s",
    ]
    return "\n".join(lines)


def cmd_select(args: argparse.Namespace) -> int:
    from .corpus_io import check_output, default_report_path, write_selection

    t0 = time.perf_counter()
    inp = Path(args.input)
    if _is_index_dir(inp):
        return _select_saved_graph(args)
    if args.out is None and not args.dry_run:
        raise InputError("select needs --out OUTPUT (or --dry-run to only estimate)")
    size, overlap = _chunking(args)
    corpus = _read_input(args, inp)
    out = Path(args.out) if args.out is not None else None
    graph = args.graph
    report_path = args.report
    if not args.dry_run:
        assert out is not None
        check_output(corpus, out)
        graph = graph or out.parent / f"{out.name}.g2cons"
        report_path = report_path or default_report_path(corpus, out)
        _check_graph_dir(graph)
    chunks = _chunk(args, corpus.documents, size, overlap)
    index = _build_index(args, chunks)
    rep = index.select(
        kappa=args.kappa,
        kappa_by=args.kappa_by,
        selector=args.selector,
        price_per_mtok=args.price_per_mtok,
        prompt_tokens_per_call=args.prompt_tokens_per_call,
    )
    kept_docs = {str(index.chunk(i).metadata.get("source", i)) for i in rep.kept_ids}
    n_files = ""
    report: dict[str, Any] = {
        "input": str(inp),
        "kind": corpus.kind,
        "n_documents": len(corpus.documents),
        "n_documents_kept": len(kept_docs),
        "chunk_tokens": size,
        "chunk_overlap": overlap,
        "tokenizer": index.tokenizer.name,
        "embedder": index.embedder.name,
        "dry_run": bool(args.dry_run),
        "output": None if args.dry_run else str(out),
        "graph": None if args.dry_run else str(graph),
        **rep.to_dict(),
        "graph_stats": index.stats.to_dict(),
    }
    report["seconds"] = round(time.perf_counter() - t0, 3)
    if not args.dry_run:
        assert out is not None and graph is not None and report_path is not None
        report["report"] = str(report_path)
        text = json.dumps(report, indent=2, ensure_ascii=False)
        inside = corpus.kind == "folder" and Path(report_path).parent.resolve() == out.resolve()
        extra = {Path(report_path).name: text} if inside else None
        _info(args, f"writing {len(rep.kept_ids):,} chunks to {out}")
        written = write_selection(corpus, index.chunks, rep.kept_ids, out, extra_files=extra, show_progress=_show(args))
        if not inside:
            Path(report_path).parent.mkdir(parents=True, exist_ok=True)
            Path(report_path).write_text(text, encoding="utf-8")
        _save_graph(
            index,
            graph,
            {
                "input": str(inp),
                "kind": corpus.kind,
                "chunk_tokens": size,
                "chunk_overlap": overlap,
                "text_column": args.text_column,
                "encoding": args.encoding,
            },
        )
        n_files = f"{len(written):,} files" if corpus.kind == "folder" else f"{len(rep.kept_ids):,} records"
        report["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(_summary(report))
        if args.dry_run:
            print("dry run: nothing written")
        else:
            print(f"wrote    {out} ({n_files}), report {report_path}, concept graph {graph}")
    return 0


# ---------------------------------------------------------------------------------------------- fuse
def _read_host(path: Path) -> list[Any]:
    if not path.is_file():
        raise InputError(f"{path}: no such host results file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    if isinstance(data, dict):
        data = data.get("items", data.get("results"))
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON list of items (or {{'items': [...]}})")
    return data


def cmd_fuse(args: argparse.Namespace) -> int:
    from .index import G2ConSIndex

    host = _read_host(args.host)
    index = G2ConSIndex.load(args.graph)
    fused = index.fuse(host, args.question, beta=args.budget, lambda_=args.lambda_, spill=args.spill)
    used = sum(f.n_tokens for f in fused)
    counts = {s: sum(f.source == s for f in fused) for s in ("both", "host", "concept")}
    if args.json:
        rows = [
            {
                "source": f.source,
                "chunk_id": f.chunk_id,
                "unit_id": f.unit_id,
                "score": f.score,
                "n_tokens": f.n_tokens,
                "reason": f.concept.reason if f.concept is not None else None,
                "text": f.text,
            }
            for f in fused
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for f in fused:
            print(f"[{f.source}] {f.chunk_id} {f.n_tokens} tok, score {f.score:.3f}: {f.text[:100]!r}")
    print(
        f"fused {len(fused)} items, {used:,} tokens <= budget {args.budget:,} "
        f"(both {counts['both']}, host {counts['host']}, concept {counts['concept']})",
        file=sys.stderr,
    )
    return 0


# ---------------------------------------------------------------------------------------------- add / remove
def cmd_add(args: argparse.Namespace) -> int:
    from .corpus_io import chunk_documents, read_many
    from .index import G2ConSIndex

    t0 = time.perf_counter()
    index = G2ConSIndex.load(args.graph)
    saved = _read_sidecar(args.graph)
    size, overlap = _chunking(args, saved)
    if args.text_column is None:
        args.text_column = saved.get("text_column", "text")
    if args.encoding is None:
        args.encoding = saved.get("encoding", "utf-8")
    corpora = read_many(args.files, args.text_column, args.encoding, args.skip_empty, _show(args))
    docs = [d for c in corpora for d in c.documents]
    chunks = chunk_documents(docs, size, overlap, tokenizer=index.tokenizer)
    before = len(index.chunks)
    index.add(chunks, show_progress=_show(args))
    _save_graph(index, args.graph, {**saved, "chunk_tokens": size, "chunk_overlap": overlap})
    print(index.stats)
    print(
        f"added {len(docs):,} documents ({len(chunks):,} chunks): {before:,} -> {len(index.chunks):,} chunks "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from .index import G2ConSIndex

    index = G2ConSIndex.load(args.graph)
    ids = {c.id for c in index.chunks}
    by_source: dict[str, list[str]] = {}
    for c in index.chunks:
        by_source.setdefault(str(c.metadata.get("source", c.id)), []).append(c.id)
    drop: list[str] = []
    unknown: list[str] = []
    for x in args.ids:
        if x in ids:
            drop.append(x)
        elif x in by_source:
            drop.extend(by_source[x])
        else:
            unknown.append(x)
    if unknown:
        raise InputError(f"unknown chunk or document ids: {unknown[:5]} (see chunks.jsonl in {args.graph})")
    before = len(index.chunks)
    index.remove(sorted(set(drop)))
    _save_graph(index, args.graph, _read_sidecar(args.graph))
    print(index.stats)
    print(f"removed {len(set(drop)):,} chunks: {before:,} -> {len(index.chunks):,} chunks")
    return 0


# ---------------------------------------------------------------------------------------------- parser
_SELECT_EPILOG = """\
examples:
  g2cons select ragtest/input --kappa 0.8 --out ragtest/input_core        # MS GraphRAG input folder
  g2cons select docs.csv --text-column body --out core.csv --price-per-mtok 0.15
  g2cons select corpus.jsonl --dry-run                                     # estimate only, writes nothing
  g2cons select GRAPH_DIR --kappa 0.5 --out report.json                    # on a saved graph: report only

INPUT: a folder of .txt/.md files (searched recursively), a .txt/.md file, a .csv with a text column,
a .jsonl or a .json list of objects with a text field. Documents are chunked like MS GraphRAG (and LightRAG):
windows of --chunk-tokens cl100k tokens with --chunk-overlap tokens of overlap. The kept chunks are written
in the input's format: a folder (one file per kept chunk: a document that is one chunk keeps its file name,
a longer one gives name.partNNNN.txt files), or the same CSV/JSONL/JSON with one row per kept chunk.
Also written: selection_report.json (inside an output folder; OUT_STEM.selection_report.json beside an
output file) and the concept graph (OUTPUT.g2cons/ beside the output, or --graph DIR).
"""


def fusion_opts(p: argparse.ArgumentParser, what: str) -> None:
    """``--lambda`` and ``--spill``: None means the config's (0.4 and on; paper mode 0.6 and off)."""
    p.add_argument(
        "--lambda",
        dest="lambda_",
        type=float,
        default=None,
        help=f"host share of the budget {what} (default: the config's, 0.4; paper mode 0.6)",
    )
    p.add_argument(
        "--spill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"unused budget of one path goes to the other, {what} (default: the config's, on; paper mode off)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="g2cons",
        description="G2ConS concept graph for Graph-RAG (offline): pick the core chunks before an LLM-driven "
        "KG build, retrieve along concepts, fuse with a host's context.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{eval,build,select,query,fuse,add,remove}")
    fmt = argparse.RawDescriptionHelpFormatter

    def common(sp_: argparse.ArgumentParser) -> None:
        sp_.add_argument("--embedder", default="wordllama", help="wordllama | minilm | openai[:model] | hash")
        sp_.add_argument("--mode", default="default", choices=["default", "paper"])
        sp_.add_argument("--unit-tokens", type=int, default=150, help="retrieval unit size; 0 = whole chunks")
        sp_.add_argument("--cache-dir", default=None, help="embedding cache directory (reruns are cheap)")
        sp_.add_argument("--quiet", action="store_true", help="no progress bars")

    def input_opts(sp_: argparse.ArgumentParser, defaults: bool = True) -> None:
        g = sp_.add_argument_group("input and chunking")
        g.add_argument(
            "--text-column",
            default="text" if defaults else None,
            help="CSV column / JSON field holding the text (default: text)",
        )
        g.add_argument("--encoding", default="utf-8" if defaults else None, help="text encoding (default: utf-8)")
        g.add_argument("--skip-empty", action="store_true", help="skip empty files/records instead of failing")
        g.add_argument(
            "--chunk-tokens",
            type=int,
            default=None,
            help="chunk size in cl100k tokens, as the host chunks (default 1200, MS GraphRAG and LightRAG); "
            "0 = one chunk per document",
        )
        g.add_argument("--chunk-overlap", type=int, default=None, help="token overlap of chunks (default 100)")

    e = sub.add_parser("eval", help="Context Recall of several methods side by side")
    e.add_argument("--corpus", required=True, type=Path)
    e.add_argument("--questions", required=True, type=Path)
    e.add_argument("--methods", default="dense,bm25,keyword,concept,concept-paper")
    e.add_argument("--budgets", type=_ints, default=[2000, 4000, 12000])
    e.add_argument("--limit", type=int, default=0, help="only the first N questions (smoke runs)")
    e.add_argument("--out", type=Path, default=None)
    e.add_argument("--selection", action="store_true", help="also measure core-chunk selection vs random")
    e.add_argument("--kappas", type=_floats, default=[0.2, 0.8])
    e.add_argument("--report", type=Path, default=None, help="write a Markdown report with PNG plots to this folder")
    e.add_argument(
        "--host",
        default=None,
        metavar="NAME",
        help="also measure a host KG path and fused G2ConS: an installed host plug-in (llama-index-ner: "
        "PropertyGraphIndex with spaCy NER, no LLM; llama-index-llm: SimpleLLMPathExtractor) or module:factory",
    )
    e.add_argument("--host-kappas", type=_floats, default=[0.2, 0.4, 0.6, 0.8, 1.0], help="host KG kappa sweep")
    e.add_argument("--lambdas", type=_floats, default=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], help="fusion lambda sweep")
    e.add_argument("--host-kappa", type=float, default=0.8, help="kappa of the host/fused rows of the main table")
    fusion_opts(e, "of the fused row of the main table")
    e.add_argument("--price-in", type=float, default=0.15, help="USD per 1M LLM input tokens (default 0.15)")
    e.add_argument("--price-out", type=float, default=0.60, help="USD per 1M LLM output tokens (default 0.60)")
    e.add_argument(
        "--answer-model",
        default=None,
        help="also answer with this OpenAI(-compatible) chat model and report EM/F1 (needs OPENAI_API_KEY or "
        "OPENAI_BASE_URL)",
    )
    e.add_argument(
        "--answer-budget",
        type=int,
        default=None,
        help="budget of the EM/F1 contexts (one of --budgets; default: smallest)",
    )
    e.add_argument(
        "--pack-tokens",
        type=int,
        default=0,
        help="first pack passages into chunks of this many tokens (MS GraphRAG: 1200); 0 = no packing",
    )
    common(e)
    e.set_defaults(func=cmd_eval)

    b = sub.add_parser(
        "build",
        help="build a concept graph from a folder/CSV/JSONL input and save it",
        description="Read INPUT (folder of .txt/.md, .csv, .jsonl or .json), chunk it like the host, build the "
        "concept graph and save it to --graph DIR.",
        epilog="example:\n  g2cons build ragtest/input --graph ragtest/g2cons --embedder wordllama",
        formatter_class=fmt,
    )
    b.add_argument("input", type=Path, metavar="INPUT")
    b.add_argument("--graph", required=True, type=Path, metavar="DIR", help="folder to save the graph to")
    input_opts(b)
    common(b)
    b.set_defaults(func=cmd_build)

    s = sub.add_parser(
        "select",
        help="keep the core chunks of an input for the host's KG build; write them back in the same format",
        description="Core-chunk selection: keep the kappa share of a host's chunks that carries its entities, "
        "write them in the input's format, and report what the host's LLM-driven KG build saves.",
        epilog=_SELECT_EPILOG,
        formatter_class=fmt,
    )
    s.add_argument("input", type=Path, metavar="INPUT", help="folder/.txt/.md/.csv/.jsonl/.json, or a saved graph")
    s.add_argument("--kappa", type=float, default=0.8, help="share to keep (default 0.8)")
    s.add_argument(
        "--kappa-by",
        choices=["tokens", "chunks"],
        default=None,
        help="kappa is a share of tokens (default) or of chunks",
    )
    s.add_argument(
        "--selector",
        default=None,
        help="coverage (default) | concept_coverage | pagerank | shortest | uniform | knn_pagerank",
    )
    s.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="OUTPUT",
        help="output folder (folder input) or file (CSV/JSONL/JSON input)",
    )
    s.add_argument("--dry-run", action="store_true", help="only estimate: build, select and print; write nothing")
    s.add_argument(
        "--price-per-mtok",
        type=float,
        default=0.15,
        help="LLM input price in USD per 1M tokens (default 0.15, GPT-4o-mini)",
    )
    s.add_argument(
        "--prompt-tokens-per-call",
        type=int,
        default=0,
        help="tokens of the host's extraction prompt sent with every chunk: kappa by tokens and the cost count it "
        "(default 0)",
    )
    s.add_argument(
        "--graph",
        type=Path,
        default=None,
        metavar="DIR",
        help="where to save the concept graph (default: OUTPUT.g2cons beside the output)",
    )
    s.add_argument("--report", type=Path, default=None, help="where to write selection_report.json")
    s.add_argument("--json", action="store_true", help="print the report as JSON instead of the summary")
    input_opts(s)
    common(s)
    s.set_defaults(func=cmd_select)

    q = sub.add_parser(
        "query",
        help="concept-path retrieval from a saved graph",
        description="Retrieve the concept path for a question under a token budget, with the reason for each chunk.",
        epilog='example:\n  g2cons query ragtest/g2cons "Who founded the APA?" --budget 4000 --json',
        formatter_class=fmt,
    )
    q.add_argument("graph", type=Path, metavar="DIR")
    q.add_argument("question")
    q.add_argument("--budget", type=int, default=4000, help="token budget (default 4000)")
    q.add_argument("--json", action="store_true", help="print JSON items (chunk_id, score, reason, text)")
    q.set_defaults(func=cmd_query)

    f = sub.add_parser(
        "fuse",
        help="fuse a host's retrieved context with the concept path under a budget",
        description="Weighted context ensemble: items retrieved by both paths first; host items take at most "
        "lambda x budget tokens, concept items the rest; never more than --budget tokens.",
        epilog="HOST.json: a list of items, each with chunk_id and/or text, optionally score and n_tokens,\n"
        'e.g. [{"chunk_id": "a.txt", "score": 0.9}, {"text": "..."}] (or {"items": [...]}).\n'
        'example:\n  g2cons fuse ragtest/g2cons "Who founded the APA?" --host host.json --budget 4000 --json',
        formatter_class=fmt,
    )
    f.add_argument("graph", type=Path, metavar="DIR")
    f.add_argument("question")
    f.add_argument("--host", required=True, type=Path, metavar="HOST.json", help="the host's retrieved items")
    f.add_argument("--budget", type=int, default=4000, help="token budget beta (default 4000)")
    fusion_opts(f, "of the fused context")
    f.add_argument("--json", action="store_true", help="print JSON items")
    f.set_defaults(func=cmd_fuse)

    a = sub.add_parser(
        "add",
        help="add documents to a saved graph without a rebuild",
        description="Read FILES (.txt/.md files, folders, .csv, .jsonl, .json), chunk them with the graph's "
        "settings, and add them; nothing already in the graph is embedded again. Equals a rebuild.",
        epilog="example:\n  g2cons add ragtest/g2cons new/report.txt new/more_docs/",
        formatter_class=fmt,
    )
    a.add_argument("graph", type=Path, metavar="DIR")
    a.add_argument("files", nargs="+", type=Path, metavar="FILES")
    input_opts(a, defaults=False)
    a.add_argument("--quiet", action="store_true", help="no progress bars")
    a.set_defaults(func=cmd_add)

    r = sub.add_parser(
        "remove",
        help="remove chunks or whole documents from a saved graph without a rebuild",
        description="Remove by chunk id or by document id (a file's relative path, a record's id): a document "
        "id removes all its chunks. Equals a rebuild without them.",
        epilog="example:\n  g2cons remove ragtest/g2cons old/report.txt 'big.txt#3'",
        formatter_class=fmt,
    )
    r.add_argument("graph", type=Path, metavar="DIR")
    r.add_argument("ids", nargs="+", metavar="IDS")
    r.set_defaults(func=cmd_remove)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        return int(args.func(args))
    except G2ConSError as e:
        print(f"g2cons: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a disk full, a permission lost half-way: name the file, no traceback
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"g2cons: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("g2cons: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
