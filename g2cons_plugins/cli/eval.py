"""``g2cons eval``: Context Recall of several methods side by side (the benchmark harness in
:mod:`g2cons_plugins.eval`)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..storage.outputs import (
    check_disjoint,
    check_replaceable_file,
    remember_output,
    sha256_file,
    write_output_file,
    written_unchanged,
)
from ._common import FMT, _config, _ints, _peak_rss_mb, common_opts, count, fusion_opts, positive, price, share, shares

__all__ = ["cmd_eval", "host_options", "register"]


def _check_eval_paths(args: argparse.Namespace) -> None:
    """Before any work: outputs apart from the inputs and each other; never overwrite what eval did not write."""
    check_disjoint(
        {"--corpus": args.corpus, "--questions": args.questions},
        {"--out": args.out, "--report": args.report, "--per-question": args.per_question},
    )
    if args.out is not None:
        check_replaceable_file(args.out, "--out")
    if args.per_question is not None:
        check_replaceable_file(args.per_question, "--per-question")
    rep = args.report
    if rep is not None and rep.exists():
        if not rep.is_dir():
            raise InputError(f"--report {rep}: exists and is not a folder")
        # an earlier report is replaced only while every file in it is what g2cons wrote (same SHA-256)
        foreign = sorted(p.name for p in rep.iterdir() if not written_unchanged(p))
        if foreign:
            raise InputError(
                f"--report {rep}: holds files g2cons did not write or that changed since it wrote them: "
                f"{foreign[:5]}; g2cons never overwrites what may hold your edits: move them or choose another folder"
            )


def cmd_eval(args: argparse.Namespace) -> int:
    from ..eval.evaluation import METHODS, evaluate_retrieval, load_questions, passage_recall, read_jsonl
    from ..index import G2ConSIndex

    _check_eval_paths(args)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise InputError(f"unknown methods {bad}; choose from {list(METHODS)}")
    corpus: list[Any] = read_jsonl(args.corpus)
    if args.pack_tokens:
        from ..chunks import make_chunks, pack_chunks
        from ..text import get_tokenizer

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
    per_q: list[dict[str, Any]] = []
    results = evaluate_retrieval(
        index, questions, methods, args.budgets, show_progress=not args.quiet, per_question=per_q
    )
    recall = passage_recall(index, questions, methods, per_question=per_q)
    out: dict[str, Any] = {
        "results": results,
        "recall": recall,
        "paired": _paired(per_q, methods, args.budgets, bool(recall)),
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
        from ..eval.evaluation import selection_quality

        out["selection"] = selection_quality(index, questions, kappas=args.kappas)
    extra = _eval_host(args, index, questions, out) if args.host else {}
    if args.selection_downstream:
        from ..eval.host_eval import selection_downstream
        from ..hosts.registry import load_host

        out["selection_downstream"] = selection_downstream(
            index,
            questions,
            load_host(args.host or "llama-index-ner", **host_options(args.host_option)),
            kappas=args.downstream_kappas,
            budgets=args.budgets,
            selectors=[x.strip() for x in args.downstream_selectors.split(",") if x.strip()],
            show_progress=not args.quiet,
        )
    if args.answer_model:
        _eval_answers(args, index, questions, out, extra)
    out["settings"]["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    _print_tables(out)
    _write_outputs(args, out, per_q)
    return 0


def _print_tables(out: dict[str, Any]) -> None:
    """The result tables on stdout: methods, passage recall, selection, downstream selection, host and fusion
    sweep, answers."""
    from ..eval.evaluation import RECALL_COLUMNS, RESULT_COLUMNS, SELECTION_COLUMNS, format_table

    results, recall = out["results"], out["recall"]
    print(format_table(results, RESULT_COLUMNS))
    if recall:
        print()
        print(format_table(recall, RECALL_COLUMNS))
    if "selection" in out:
        print()
        print(format_table(out["selection"], SELECTION_COLUMNS))
    if "selection_downstream" in out:
        from ..eval.host_eval import DOWNSTREAM_COLUMNS

        print()
        print(format_table(out["selection_downstream"], DOWNSTREAM_COLUMNS))
    if "host" in out:
        from ..eval.host_eval import HOST_BUILD_COLUMNS
        from ..eval.report import host_pivot

        print(f"\n{out['host']['host']['label']}\n")
        print(format_table(out["host"]["builds"], HOST_BUILD_COLUMNS))
        print()
        print(format_table(*host_pivot(out["host"])))
        if out["host"].get("complementarity"):
            from ..eval.report import complementarity_table

            print(f"\nWhat each path adds at kappa {out['host']['main']['kappa']:g} (questions hit):\n")
            print(complementarity_table(out["host"]["complementarity"]))
    if "answers" in out:
        print()
        print(format_table(out["answers"]["rows"], ("method", "budget", "em", "f1", "n")))


def _write_outputs(args: argparse.Namespace, out: dict[str, Any], per_q: list[dict[str, Any]]) -> None:
    """--per-question, --out and --report, each written atomically."""
    if args.per_question:
        Path(args.per_question).parent.mkdir(parents=True, exist_ok=True)
        write_output_file(args.per_question, "".join(json.dumps(r) + "\n" for r in per_q).encode("utf-8"), "eval")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_output_file(args.out, json.dumps(out, indent=2).encode("utf-8"), "eval")
    if args.report:
        from ..eval.report import write_report

        path = write_report(out, Path(args.report), command="g2cons " + " ".join(sys.argv[1:]))
        for p in sorted(Path(args.report).iterdir()):  # all g2cons's (checked before): recorded for a rerun
            if p.is_file() and not p.is_symlink():
                remember_output(p, sha256_file(p), "eval --report")
        print(f"report: {path}", file=sys.stderr)


def host_options(pairs: list[str]) -> dict[str, Any]:
    """``--host-option KEY=VALUE`` pairs as keyword arguments of the host factory (ints and floats parsed)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise InputError(f"--host-option {pair!r}: expected KEY=VALUE, e.g. model=gpt-4o-mini")
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out


def _floats(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not out or any(not 0.0 <= x <= 10.0 for x in out):
        raise argparse.ArgumentTypeError(f"expected numbers in [0, 10], got {text!r}")
    return out


def _paired(
    records: list[dict[str, Any]], methods: list[str], budgets: list[int], recall: bool
) -> list[dict[str, Any]]:
    """``concept`` against every other method: paired sign test on CR hits per budget (and on recall@5)."""
    from ..eval.evaluation import paired_test

    if "concept" not in methods:
        return []
    rows = []
    for other in methods:
        if other == "concept":
            continue
        rows += [paired_test(records, "concept", other, b) for b in budgets]
        if recall:
            rows.append(paired_test(records, "concept", other, "rank", key="recall@5"))
    return rows


def _eval_host(
    args: argparse.Namespace, index: Any, questions: list[dict[str, Any]], out: dict[str, Any]
) -> dict[tuple[str, int], list[str]]:
    """Host KG and fused G2ConS (``--host``): the kappa x lambda sweep, and host/fused rows in the main table.
    Returns the host and fused contexts of the main setting (for EM/F1)."""
    from ..eval.host_eval import evaluate_host
    from ..hosts.registry import load_host

    kappas = sorted(set(args.host_kappas) | {args.host_kappa})
    lam = index.config.fusion_lambda if args.lambda_ is None else args.lambda_
    spill = index.config.fusion_spill if args.spill is None else args.spill
    lambdas = sorted(set(args.lambdas) | {lam})
    host = load_host(args.host, **host_options(args.host_option))
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
        host_weights=sorted(set(args.host_weights or []) | {index.config.fusion_options.host_weight}),
    )
    contexts: dict[tuple[str, int], list[str]] = res.pop("contexts")
    rule, weight = index.config.fusion, index.config.fusion_options.host_weight
    res["main"] = {"kappa": args.host_kappa, "lambda": lam, "spill": spill, "fusion": rule, "host_weight": weight}
    out["host"] = res
    for r in res["sweep"]:
        if r["kappa"] != args.host_kappa:
            continue
        main_method = {"score": "fused-score", "share": "fused-share", "novel": "fused-novel"}.get(rule, "fused")
        name = "host-kg" if r["method"] == "host" else "fused" if r["method"] == main_method else (
            {"fused": "fused-ensemble"}.get(r["method"], r["method"])
        )
        if r["method"] == "fused" and not (r["lambda"] == lam and r["spill"] == spill):
            continue
        if r["method"] in ("fused-share", "fused-novel") and r["lambda"] != lam:
            continue
        if r["method"] == "fused-score" and r["host_weight"] != weight:
            continue
        row = {k: v for k, v in r.items() if k not in ("kappa", "lambda", "spill", "method", "host_weight")}
        row["method"] = name
        out["results"].append(row)
    from ..eval.report import complementarity

    main_rows = [r for r in out["results"] if r["method"] in ("host-kg", "fused")]
    res["complementarity"] = complementarity(
        res["concept"], [r for r in main_rows if r["method"] == "host-kg"],
        [r for r in main_rows if r["method"] == "fused"], kappa=args.host_kappa,
    )  # fmt: skip
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
    from ..eval.answering import Answerer, evaluate_answers
    from ..eval.evaluation import method_contexts

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


def _data_opts(e: argparse.ArgumentParser) -> None:
    """Inputs, methods, budgets and the result files."""
    e.add_argument("--corpus", required=True, type=Path)
    e.add_argument("--questions", required=True, type=Path)
    e.add_argument("--methods", default="dense,bm25,keyword,concept,concept-paper")
    e.add_argument("--budgets", type=_ints, default=[2000, 4000, 12000])
    e.add_argument("--limit", type=count, default=0, help="only the first N questions (smoke runs)")
    e.add_argument("--out", type=Path, default=None)
    e.add_argument(
        "--per-question",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write one JSONL record per question, method and budget (hit, support share, recall@k) for "
        "paired comparisons",
    )


def _selection_opts(e: argparse.ArgumentParser) -> None:
    """Core-chunk selection against random controls, and selection judged downstream by a host KG."""
    e.add_argument("--selection", action="store_true", help="also measure core-chunk selection vs random")
    e.add_argument("--kappas", type=shares, default=[0.2, 0.8])
    e.add_argument(
        "--selection-downstream",
        action="store_true",
        help="judge selectors by the host KG built from their kept chunks (--host, default llama-index-ner): "
        "--downstream-selectors at --downstream-kappas; host-KG and fused CR, calls and input tokens",
    )
    e.add_argument("--downstream-kappas", type=shares, default=[0.2, 0.5, 0.8])
    e.add_argument(
        "--downstream-selectors",
        default="default,length-matched-random,shortest,uniform",
        help="selectors judged by --selection-downstream: default (the index's), length-matched-random, or any "
        "selector name (coverage, concept_coverage, pagerank, shortest, uniform, knn_pagerank)",
    )


def _host_opts(e: argparse.ArgumentParser) -> None:
    """The host KG path and fused G2ConS: the host, its kappa / lambda / host-weight sweeps, fusion, prices."""
    e.add_argument(
        "--host",
        default=None,
        metavar="NAME",
        help="also measure a host KG path and fused G2ConS: an installed host plug-in (llama-index-ner: "
        "PropertyGraphIndex with spaCy NER, no LLM; llama-index-llm: SimpleLLMPathExtractor; replay:PATH: a "
        "precomputed LLM extraction (JSONL, HippoRAG OpenIE, GraphRAG output, LightRAG dir) replayed into a "
        "PropertyGraphIndex; replay-core:PATH: the same without LlamaIndex; graph-walk:PATH: the same walked as "
        "HippoRAG 2 walks its graph, facts -> seed entities -> personalized PageRank, no LLM) or module:factory",
    )
    e.add_argument(
        "--host-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the host factory, repeatable (e.g. model=gpt-3.5-turbo-1106 to label a replayed "
        "extraction with the model that made it)",
    )
    e.add_argument("--host-kappas", type=shares, default=[0.2, 0.4, 0.6, 0.8, 1.0], help="host KG kappa sweep")
    e.add_argument("--lambdas", type=shares, default=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], help="fusion lambda sweep")
    e.add_argument("--host-kappa", type=share, default=0.8, help="kappa of the host/fused rows of the main table")
    e.add_argument(
        "--host-weights",
        type=_floats,
        default=None,
        help="score-fusion host_weight sweep (default: the config's, 0.6); the main table uses the config's",
    )
    fusion_opts(e, "of the fused row of the main table")
    e.add_argument("--price-in", type=price, default=0.15, help="USD per 1M LLM input tokens (default 0.15)")
    e.add_argument("--price-out", type=price, default=0.60, help="USD per 1M LLM output tokens (default 0.60)")


def _answer_opts(e: argparse.ArgumentParser) -> None:
    """EM / F1 with an answering model."""
    e.add_argument(
        "--answer-model",
        default=None,
        help="also answer with this OpenAI(-compatible) chat model and report EM/F1 (needs OPENAI_API_KEY or "
        "OPENAI_BASE_URL)",
    )
    e.add_argument(
        "--answer-budget",
        type=positive,
        default=None,
        help="budget of the EM/F1 contexts (one of --budgets; default: smallest)",
    )


def register(sub: Any) -> None:
    """Add the ``eval`` subcommand."""
    e = sub.add_parser(
        "eval",
        help="Context Recall of several methods side by side",
        epilog="example (corpus: JSONL of id/text/title; questions: JSONL with answers and supporting ids):\n"
        "  g2cons eval --corpus corpus.jsonl --questions questions.jsonl --methods dense,concept "
        "--budgets 2000,4000 --limit 5 --out results.json",
        formatter_class=FMT,
    )
    _data_opts(e)
    _selection_opts(e)
    e.add_argument("--report", type=Path, default=None, help="write a Markdown report with PNG plots to this folder")
    _host_opts(e)
    _answer_opts(e)
    e.add_argument(
        "--pack-tokens",
        type=count,
        default=0,
        help="first pack passages into chunks of this many tokens (MS GraphRAG: 1200); 0 = no packing",
    )
    common_opts(e)
    e.set_defaults(func=cmd_eval)
