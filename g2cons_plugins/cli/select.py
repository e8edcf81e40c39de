"""``g2cons select``: keep the core chunks of a host's input and write them back in the input's format."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..hosts.pipelines.corpus_io import _check_writable, write_selection
from ..storage.outputs import (
    atomic_write_text,
    check_disjoint,
    check_replaceable_file,
    json_stamp,
    recover_interrupted,
    sha256_file,
    staged_folder,
    write_output_file,
)
from ..text import format_usd
from ._common import (
    FMT,
    _build_index,
    _check_graph_dir,
    _chunking,
    _info,
    _is_index_dir,
    _read_input,
    _save_graph,
    _show,
    common_opts,
    count,
    input_opts,
    price,
    share,
)

_SELECT_EPILOG = """\
examples:
  g2cons select --root ragtest --kappa 0.8             # MS GraphRAG project: writes ragtest/g2cons/ (graph in graph/)
  g2cons select ragtest/input --kappa 0.8 --out ragtest/input_core        # a folder of .txt/.md files
  g2cons select docs.csv --text-column body --out core.csv --price-per-mtok 0.15
  g2cons select corpus.jsonl --dry-run                                     # estimate only, writes nothing
  g2cons select ragtest/g2cons/graph --kappa 0.5 --out report.json         # on a saved graph: report only

INPUT: a folder of .txt/.md files (searched recursively), a .txt/.md file, a .csv with a text column,
a .jsonl or a .json list of objects with a text field. Documents are chunked like MS GraphRAG (and LightRAG):
windows of --chunk-tokens cl100k tokens with --chunk-overlap tokens of overlap. The kept chunks are written
in the input's format: a folder (one file per kept chunk: a document that is one chunk keeps its file name,
a longer one gives name.partNNNN.txt files), or the same CSV/JSONL/JSON with one row per kept chunk.
Also written: OUT.selection_report.json beside an output folder (OUT_STEM.selection_report.json beside an
output file) and the concept graph (OUTPUT.g2cons/ beside the output, or --graph DIR).
--root PROJECT writes one folder, PROJECT/g2cons/ (or --out DIR), all or nothing: input/ (the core chunks),
settings.yaml (the project's, input pointed at input/; run graphrag index --root PROJECT/g2cons), the report
selection_report.json and the concept graph graph/ (the DIR of query, fuse, add, remove, export and show).
"""


# ---------------------------------------------------------------------------------------------- select
def _resolve_price(args: argparse.Namespace, prof: Any) -> None:
    """``args.price_per_mtok``: the one given, else the list price of the model the host's settings name, else
    gpt-4o-mini's (``g2cons_plugins.hosts.pipelines.prices``); ``args.price_source`` says which."""
    from ..hosts.pipelines.prices import graphrag_model, resolve_price

    model = None
    if prof is not None and prof.host == "graphrag":
        model = graphrag_model(prof.settings_raw)
    where = prof.settings_path.name if prof is not None and prof.settings_path is not None else "settings.yaml"
    got = resolve_price(args.price_per_mtok, model, where)
    args.price_per_mtok, args.price_source = got.per_mtok, got.source


def _select_saved_graph(args: argparse.Namespace) -> int:
    """The original form: ``g2cons select GRAPH_DIR [--out report.json]`` on a saved graph."""
    from ..index import G2ConSIndex

    out = None if args.dry_run else args.out
    if out is not None:
        check_disjoint({"INPUT": args.input}, {"--out": out})
        check_replaceable_file(out, "--out")
        _check_writable(out.parent)
    index = G2ConSIndex.load(args.input)
    rep = index.select(
        kappa=args.kappa,
        kappa_by=args.kappa_by,
        selector=args.selector,
        price_per_mtok=args.price_per_mtok,
        prompt_tokens_per_call=args.prompt_tokens_per_call or 0,
    )
    # the CLI's money format (two significant digits below a cent) in the API's one line
    print(rep.summary().replace(f"${rep.usd_avoided:.2f} at", f"{format_usd(rep.usd_avoided)} at"))
    print(f"price    ${rep.price_per_mtok}/1M input tokens: {args.price_source}")
    if out is not None:
        body = {**json_stamp("select report"), **rep.to_dict(), "price_source": args.price_source}
        _write_owned(out, json.dumps(body, indent=2))
    return 0


def _write_owned(path: Path, text: str) -> None:
    """Write a file atomically, its SHA-256 recorded (a rerun replaces it only while unchanged); an earlier
    version's marker in its folder, if any, is kept up to date, and none is created."""
    write_output_file(path, text.encode("utf-8"), "select")


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
        f"selector {report['selector']}, kappa {report['kappa']} by {report['kappa_by']}; {report['seconds']:.1f} s",
        f"price    ${report['price_per_mtok']}/1M input tokens: {report['price_source']}",
    ]
    if "host_cost" not in report:  # with a host profile, its own calls and cost lines replace this one
        lines.insert(
            3,
            f"LLM calls (one extraction call per chunk): {n:,} -> {report['n_kept']:,}, "
            f"{report['calls_avoided']:,} avoided; "
            f"{report['input_tokens_avoided']:,} input tokens avoided = {format_usd(report['usd_avoided'])} saved "
            f"at ${report['price_per_mtok']}/1M tokens",
        )
    return "\n".join(lines)


def _profile(args: argparse.Namespace) -> Any:
    """The host's settings (``--root`` / ``--host``), or None for plain ``select``."""
    from ..hosts.pipelines.host_projects import lightrag_profile, read_graphrag

    host = args.host or ("graphrag" if args.root is not None else None)
    if host == "graphrag":
        if args.root is None:
            raise InputError("--host graphrag needs --root PROJECT (the folder with settings.yaml)")
        if args.input is not None:
            raise InputError(
                f"give either INPUT ({args.input}) or --root {args.root}: the input folder comes from "
                "the project's settings"
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prof = read_graphrag(args.root)
        for w in caught:
            print(f"g2cons: warning: {w.message}", file=sys.stderr)
    elif host == "lightrag":
        if args.root is not None:
            raise InputError("--root reads an MS GraphRAG project; for LightRAG give the INPUT folder")
        if args.input is None:
            raise InputError("--host lightrag needs INPUT (the folder of documents you insert)")
        prof = lightrag_profile(Path(args.input))
    else:
        return None
    if args.encoding_model:
        from dataclasses import replace

        prof = replace(prof, encoding_model=args.encoding_model)
    return prof


def _host_cost(args: argparse.Namespace, prof: Any, chunks: list[Any], kept: list[str], tok: Any) -> dict[str, Any]:
    """Calls, input tokens (exact for the first call of a chunk) and USD of the host's extraction, full vs kept."""
    per = dict(zip([c.id for c in chunks], prof.call_tokens([c.text for c in chunks], tok), strict=True))
    cpc = prof.calls_per_chunk

    def block(ids: list[str]) -> dict[str, Any]:
        first = sum(per[i] for i in ids)
        b: dict[str, Any] = {
            "chunks": len(ids),
            "calls": len(ids) * cpc,
            "first_call_input_tokens": first,
            "input_tokens": first * cpc,
            "usd_input": round(first * cpc / 1e6 * args.price_per_mtok, 6),
        }
        if args.price_out_per_mtok is not None:
            b["output_tokens"] = len(ids) * cpc * args.output_tokens_per_call
            b["usd_output"] = round(b["output_tokens"] / 1e6 * args.price_out_per_mtok, 6)
        b["usd"] = round(b["usd_input"] + b.get("usd_output", 0.0), 6)
        return b

    full, sel = block([c.id for c in chunks]), block(kept)
    return {
        "host": prof.host,
        "encoding_model": prof.encoding_model,
        "prompt_source": prof.prompt_source,
        "prompt_tokens_per_call": prof.prompt_tokens(tok),
        "gleanings": prof.gleanings,
        "calls_per_chunk": cpc,
        "price_per_mtok": args.price_per_mtok,
        "price_out_per_mtok": args.price_out_per_mtok,
        "full": full,
        "selected": sel,
        "saved": {k: round(full[k] - sel[k], 6) for k in full},
    }


def _host_summary(hc: dict[str, Any]) -> str:
    f, s = hc["full"], hc["selected"]
    return (
        f"host     {hc['host']}: {hc['calls_per_chunk']} calls per chunk ({hc['gleanings']} gleanings), prompt "
        f"{hc['prompt_tokens_per_call']:,} tokens per call ({hc['encoding_model']})\n"
        + "\n".join(
            f"         {name:<5} {b['chunks']:,} chunks, {b['calls']:,} calls, {b['input_tokens']:,} input tokens, "
            f"{format_usd(b['usd'])}"
            for name, b in (("full", f), ("kept", s))
        )
    )


@dataclass
class _Run:
    """One ``select`` run: what it reads and where it writes (every path decided and checked before anything is
    read, built or written), then the input as read."""

    inp: Path  # INPUT, or the project's input folder
    prof: Any  # the host's settings (--root / --host), or None
    size: int  # chunk tokens
    overlap: int  # chunk overlap tokens
    tok: Any  # the host's tokenizer, or None (the index's default)
    out: Path | None  # the output folder or file; with --root, the core input folder in the core root
    core_root: Path | None = None  # --root: the folder written whole, all or nothing (PROJECT/g2cons or --out)
    settings_out: Path | None = None  # --root: the core run's settings.yaml
    graph: Path | None = None  # where the concept graph is saved
    report_path: Path | None = None  # where the report is written
    corpus: Any = None  # the input as the host reads it (read by _read_host_input)
    target: Path | None = None  # where the kept chunks go: ``out``, or a file of the input's name in it (--root)


def cmd_select(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.price_out_per_mtok is not None and args.output_tokens_per_call is None:
        raise InputError("--price-out-per-mtok needs --output-tokens-per-call (the tokens one extraction call returns)")
    prof = _profile(args)
    _resolve_price(args, prof)
    if args.input is None and prof is None:
        raise InputError("select needs INPUT (a folder or file) or --root PROJECT (an MS GraphRAG project)")
    inp = Path(args.input) if args.input is not None else prof.input_path
    if prof is None and _is_index_dir(inp):
        return _select_saved_graph(args)
    run = _plan(args, prof, inp)
    _read_host_input(args, run)
    if not args.dry_run:
        _check_outputs(args, run)
    chunks, index, rep = _build_and_select(args, run)
    report = _report(args, run, chunks, index, rep, t0)
    n_files = ""
    if not args.dry_run:
        n_files = _write_outputs(args, run, index, rep, report)
        report["seconds"] = round(time.perf_counter() - t0, 3)
    _print_result(args, run, report, n_files)
    return 0


def _plan(args: argparse.Namespace, prof: Any, inp: Path) -> _Run:
    """Decide the chunking and every output path, and check the paths, before anything is read."""
    root = prof.root if prof is not None and prof.host == "graphrag" else None
    if args.out is None and not args.dry_run and root is None:
        raise InputError("select needs --out OUTPUT (or --dry-run to only estimate)")
    size, overlap = _chunking(
        args, {} if prof is None else {"chunk_tokens": prof.chunk_size, "chunk_overlap": prof.chunk_overlap}
    )
    out = Path(os.path.abspath(args.out)) if args.out is not None else None  # "." has no name to derive from
    run = _Run(inp, prof, size, overlap, prof.tokenizer() if prof is not None else None, out)
    if root is not None:  # a new GraphRAG root for the core run: settings.yaml + input/ (+ report and graph)
        run.core_root = out or Path(os.path.abspath(root / "g2cons"))
        run.out = run.core_root / "input"
        run.settings_out = run.core_root / "settings.yaml"
    run.graph = args.graph or (run.core_root / "graph" if run.core_root is not None else None)
    run.report_path = args.report or (run.core_root / "selection_report.json" if run.core_root is not None else None)
    if not args.dry_run:
        _default_and_check_paths(run)
    if args.plot is not None:
        _check_plot_path(args, run)
    return run


def _default_and_check_paths(run: _Run) -> None:
    """The graph and report beside the output unless given; no output may overlap the input or another output."""
    from ..hosts.pipelines.corpus_io import default_report_path, detect_kind

    assert run.out is not None
    kind = detect_kind(run.inp) if run.inp.exists() else "folder"
    run.graph = run.graph or run.out.parent / f"{run.out.name}.g2cons"
    run.report_path = run.report_path or default_report_path(kind, run.out)  # beside the output: a host reads it all
    inputs: dict[str, Any] = {"INPUT": run.inp}
    if run.prof is not None and run.prof.settings_path is not None:
        inputs[str(run.prof.settings_path.name)] = run.prof.settings_path
    if run.core_root is not None:
        check_disjoint(inputs, {"--out": run.core_root})
    check_disjoint(
        inputs,
        {
            "--out" if run.core_root is None else "core input": run.out,
            "--graph": run.graph,
            "--report": run.report_path,
            "settings": run.settings_out,
        },
    )


def _check_plot_path(args: argparse.Namespace, run: _Run) -> None:
    from .graph_cmds import check_picture_path

    others = {"--out": run.core_root or run.out}
    others.update(
        {k: p for k, p in (("--graph", run.graph), ("--report", run.report_path)) if not _under(p, run.core_root)}
    )
    check_disjoint({"INPUT": run.inp}, {"--plot": args.plot, **others})
    check_picture_path(args.plot, "--plot")


def _read_host_input(args: argparse.Namespace, run: _Run) -> None:
    """``run.corpus``: the input as the host reads it (with --root: the files the project's settings select);
    ``run.target``: where its kept chunks go."""
    run.target = run.out
    if run.core_root is None:
        run.corpus = _read_input(args, run.inp)
        return
    from ..hosts.pipelines.host_projects import graphrag_files

    prof = run.prof
    src_files = graphrag_files(prof)  # after the path checks: a refused path is reported before any note on the input
    if prof.input_type != "text" and len(src_files) != 1:
        raise InputError(f"{run.inp}: {len(src_files)} {prof.input_type} files match; one is supported")
    if prof.input_type == "text":
        from ..hosts.pipelines.corpus_io import _read_folder

        run.corpus = _read_folder(run.inp, prof.file_encoding, args.skip_empty, _show(args), files=src_files)
    else:
        from ..hosts.pipelines.corpus_io import read_corpus

        run.corpus = read_corpus(src_files[0], prof.text_column, prof.file_encoding, args.skip_empty)
    if run.corpus.kind != "folder":
        assert run.out is not None
        run.target = run.out / src_files[0].name  # the core file keeps the input file's name, in the core folder


def _check_outputs(args: argparse.Namespace, run: _Run) -> None:
    """Before anything is built: every output can be written and replaces nothing but what g2cons wrote."""
    from ..hosts.pipelines.corpus_io import check_output

    assert run.target is not None and run.graph is not None and run.report_path is not None
    if run.core_root is not None:  # built aside and renamed in, all or nothing: an earlier one must be all ours
        graph_dir = run.core_root / "graph"
        recover_interrupted(run.core_root, owned_dir=lambda p: p == graph_dir and _is_cli_graph(p))
        _check_core_root(run.core_root, args)
        _check_writable(run.core_root.parent)
    else:
        check_output(run.corpus, run.target, report=run.report_path)
    if not _under(run.report_path, run.core_root):
        check_replaceable_file(run.report_path, "--report")
        _check_writable(run.report_path.parent)
    if not _under(run.graph, run.core_root):
        _check_graph_dir(run.graph)


def _build_and_select(args: argparse.Namespace, run: _Run) -> tuple[list[Any], Any, Any]:
    """Chunk the input as the host does, build the concept graph and select: (chunks, index, selection report)."""
    from ..hosts.pipelines.corpus_io import chunk_documents

    docs = run.corpus.documents
    chunks = chunk_documents(
        docs, run.size, run.overlap, tokenizer=run.tok, show_progress=_show(args) and len(docs) > 50
    )
    index = _build_index(args, chunks, run.tok)  # counted as chunked: the host's encoding model
    prompt_tokens = args.prompt_tokens_per_call
    if prompt_tokens is None:
        prompt_tokens = run.prof.prompt_tokens(run.tok) if run.prof is not None else 0
    rep = index.select(
        kappa=args.kappa,
        kappa_by=args.kappa_by,
        selector=args.selector,
        price_per_mtok=args.price_per_mtok,
        prompt_tokens_per_call=prompt_tokens,
    )
    return chunks, index, rep


def _report(args: argparse.Namespace, run: _Run, chunks: list[Any], index: Any, rep: Any, t0: float) -> dict[str, Any]:
    """The selection report (with the host's cost, and ``--plot`` drawn)."""
    kept_docs = {str(index.chunk(i).metadata.get("source", i)) for i in rep.kept_ids}
    report: dict[str, Any] = {
        **json_stamp("select report"),  # first key: a rerun recognises its own report (no marker beside it)
        "input": str(run.inp),
        "kind": run.corpus.kind,
        "n_documents": len(run.corpus.documents),
        "n_documents_kept": len(kept_docs),
        "chunk_tokens": run.size,
        "chunk_overlap": run.overlap,
        "tokenizer": index.tokenizer.name,
        "embedder": index.embedder.name,
        "dry_run": bool(args.dry_run),
        "output": None if args.dry_run else str(run.target),
        "graph": None if args.dry_run else str(run.graph),
        **rep.to_dict(),
        "graph_stats": index.stats.to_dict(),
        "price_source": args.price_source,
    }
    if run.prof is not None:
        hc = report["host_cost"] = _host_cost(args, run.prof, chunks, list(rep.kept_ids), run.tok)
        # one "avoided" figure in the report, the one printed: the host's calls (gleanings included) and tokens
        saved = hc["saved"]
        report.update(
            calls_avoided=saved["calls"],
            input_tokens_avoided=saved["input_tokens"],
            usd_avoided=saved["usd"],
            cost_basis=f"host_cost: {run.prof.host}'s {hc['calls_per_chunk']} calls per chunk, its prompt and encoding",
        )
        if run.settings_out is not None:
            report["settings"] = str(run.settings_out)
            report["host_command"] = f"graphrag index --root {run.settings_out.parent}"
    else:
        report["cost_basis"] = "one extraction call per chunk: its tokens plus prompt_tokens_per_call"
    if args.plot is not None:
        _plot_selection(args, index, list(rep.kept_ids))
        report["plot"] = str(args.plot)
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def _write_outputs(args: argparse.Namespace, run: _Run, index: Any, rep: Any, report: dict[str, Any]) -> str:
    """Write the kept chunks, the report and the concept graph; returns what was written ("12 files")."""
    assert run.report_path is not None
    report["report"] = str(run.report_path)
    _info(args, f"writing {len(rep.kept_ids):,} chunks to {run.target}")
    graph_settings = {
        "input": str(run.inp),
        "kind": run.corpus.kind,
        "chunk_tokens": run.size,
        "chunk_overlap": run.overlap,
        "text_column": args.text_column,
        "encoding": args.encoding,
        "tokenizer": index.tokenizer.name,
        "selection": {k: report[k] for k in ("kappa", "kappa_by", "selector")},  # g2cons show marks by it
    }
    if run.core_root is None:
        written = _write_beside_output(args, run, index, rep, report, graph_settings)
    else:
        written = _write_core_root(args, run, index, rep, report, graph_settings)
    return f"{len(written):,} files" if run.corpus.kind == "folder" else f"{len(rep.kept_ids):,} records"


def _write_beside_output(
    args: argparse.Namespace, run: _Run, index: Any, rep: Any, report: dict[str, Any], graph_settings: dict[str, Any]
) -> list[Any]:
    """Plain ``select``: the output, then the report and the graph (beside it unless given elsewhere)."""
    assert run.target is not None and run.graph is not None and run.report_path is not None
    written = write_selection(
        run.corpus, index.chunks, rep.kept_ids, run.target, show_progress=_show(args), report=run.report_path
    )
    if run.corpus.kind != "folder":  # the proof a rerun needs to replace the file (no marker beside it)
        report["output_sha256"] = sha256_file(run.target)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    run.report_path.parent.mkdir(parents=True, exist_ok=True)
    _write_owned(Path(run.report_path), text)
    _save_graph(index, run.graph, graph_settings)
    return written


def _write_core_root(
    args: argparse.Namespace, run: _Run, index: Any, rep: Any, report: dict[str, Any], graph_settings: dict[str, Any]
) -> list[Any]:
    """``select --root``: the core root built aside and renamed in (input/, settings.yaml, and the report and graph
    unless given elsewhere, which are written after it)."""
    core_root, target, graph, report_path = run.core_root, run.target, run.graph, run.report_path
    assert core_root is not None and target is not None and graph is not None and report_path is not None
    assert run.settings_out is not None
    text = json.dumps(report, indent=2, ensure_ascii=False)
    with staged_folder(core_root, "select --root", lambda: _check_core_root(core_root, args)) as stage:

        def staged(p: Path) -> Path:  # where a path inside the core root is built
            return stage / Path(os.path.abspath(p)).relative_to(core_root)

        written = write_selection(run.corpus, index.chunks, rep.kept_ids, staged(target), show_progress=_show(args))
        _write_settings(run.prof, staged(run.settings_out), core_root)
        if _under(report_path, core_root):
            staged(report_path).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(staged(report_path), text)
        if _under(graph, core_root):
            _save_graph(index, staged(graph), graph_settings)
    if not _under(report_path, core_root):
        report_path.parent.mkdir(parents=True, exist_ok=True)
        _write_owned(Path(report_path), text)
    if not _under(graph, core_root):
        _save_graph(index, graph, graph_settings)
    return written


def _print_result(args: argparse.Namespace, run: _Run, report: dict[str, Any], n_files: str) -> None:
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    print(_summary(report))
    if "host_cost" in report:
        print(_host_summary(report["host_cost"]))
    if args.dry_run:
        print("dry run: nothing written")
    else:
        print(f"wrote    {run.target} ({n_files}), report {run.report_path}, concept graph {run.graph}")
        if run.settings_out is not None:
            print(f"next     {report['host_command']}")


def _plot_selection(args: argparse.Namespace, index: Any, kept_ids: list[str]) -> None:
    """``--plot``: tokens kept per document, and the share of concepts the kept chunks cover vs kappa."""
    import numpy as np

    from ..eval.plots import selection_figure
    from .graph_cmds import write_picture

    st, dv = index.stored, index.derived
    keep = set(kept_ids)
    per_doc: dict[str, list[int]] = {}
    for k, c in enumerate(st.chunks):
        d = per_doc.setdefault(str(c.metadata.get("source", c.id)), [0, 0])
        d[0 if c.id in keep else 1] += int(st.chunk_tokens[k])
    docs = [(name, v[0], v[1]) for name, v in per_doc.items()]
    inc = dv.chunk_inc.tocsr()
    present = np.asarray(inc.sum(axis=0)).ravel() > 0
    row = {c.id: k for k, c in enumerate(st.chunks)}

    def coverage(ids: list[str]) -> float:
        if not ids or not present.any():
            return 0.0
        hit = np.asarray(inc[[row[i] for i in ids]].sum(axis=0)).ravel() > 0
        return float(hit[present].mean())

    grid = sorted({round(0.1 * i, 1) for i in range(1, 11)} | {float(args.kappa)})
    curve = [(k, coverage(list(index.select(kappa=k, kappa_by=args.kappa_by, selector=args.selector).kept_ids)))
             for k in grid]  # fmt: skip
    fig = selection_figure(docs, curve, float(args.kappa))
    rows = [
        {"document": n, "kept tokens": a, "dropped tokens": b} for n, a, b in sorted(docs, key=lambda d: -d[1] - d[2])
    ]
    write_picture(fig, args.plot, "g2cons core-chunk selection", rows, ["document", "kept tokens", "dropped tokens"])


def _write_settings(prof: Any, path: Path, new_root: Path) -> None:
    """The project's settings for the core run's root ``new_root`` (``path``: where the file is built): input
    folder ``input`` (the core chunks), prompt files pointed back at the project's; output, cache and reports land
    in the new root. Nothing else changes (values as YAML read them: dates stay dates)."""
    import yaml

    from ..hosts.pipelines.host_projects import core_settings

    data = core_settings(prof, "input", new_root)
    head = (
        f"# Written by g2cons select from {prof.settings_path}: the same settings, with the input folder set to the "
        f"core chunks (input/) and prompt paths pointing at the project.\n# Run: graphrag index --root {new_root}"
        " (set GRAPHRAG_API_KEY or copy your .env here)\n"
    )
    atomic_write_text(path, head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _under(path: Path | None, root: Path | None) -> bool:
    """``path`` is ``root`` or lies inside it (absolute paths compared; False without a root)."""
    if path is None or root is None:
        return False
    p, r = Path(os.path.abspath(path)), Path(os.path.abspath(root))
    return p == r or r in p.parents


def _check_core_root(core_root: Path, args: argparse.Namespace) -> None:
    """``select --root`` replaces its output folder whole: absent, empty, or an earlier one whose every file g2cons
    wrote, unchanged (its marker lists them; the concept graph in ``graph/`` may have been updated by ``add`` /
    ``remove``). A GraphRAG run's output/cache/logs there, or any file of the user's, make it refused."""
    from ..storage.outputs import check_replaceable_folder

    flag = "--out" if args.out is not None else "select --root output"
    check_replaceable_folder(core_root, flag, owned_dir=lambda p: p == core_root / "graph" and _is_cli_graph(p))


def _is_cli_graph(path: Path) -> bool:
    """A concept graph the CLI saved: an index folder with its sidecar and nothing but what those two write."""
    from ..storage.persistence import FILES, FILES_V3, LEGACY_FILES, LOCK, POINTER
    from ._common import SIDECAR

    if not (_is_index_dir(path) and (path / SIDECAR).is_file()):
        return False
    version = re.compile(r"^(\.tmp-)?v-\d{8}T\d{6}-[0-9a-f]{12}$")
    names = {POINTER, LOCK, SIDECAR, *LEGACY_FILES}
    in_version = {"manifest.json", *FILES, *FILES_V3, *LEGACY_FILES}  # LEGACY_FILES: the JSON lines of version 2
    for p in path.iterdir():
        if p.is_symlink():
            return False
        if p.is_dir():
            if not version.match(p.name) or any(q.name not in in_version or not q.is_file() for q in p.iterdir()):
                return False
        elif p.name not in names and not re.match(r"^\.tmp-CURRENT-[0-9a-f]{12}$", p.name):
            return False
    return True


def register(sub: Any) -> None:
    """Add the ``select`` subcommand."""
    s = sub.add_parser(
        "select",
        help="keep the core chunks of an input for the host's KG build; write them back in the same format",
        description="Core-chunk selection: keep the kappa share of a host's chunks that carries its entities, "
        "write them in the input's format, and report what the host's LLM-driven KG build saves.",
        epilog=_SELECT_EPILOG,
        formatter_class=FMT,
    )
    _host_args(s)
    _selection_args(s)
    _cost_args(s)
    _output_args(s)
    input_opts(s)
    common_opts(s)
    s.set_defaults(func=cmd_select)


def _host_args(s: Any) -> None:
    """INPUT, or the host project and how it reads and counts its input."""
    s.add_argument(
        "input",
        type=Path,
        nargs="?",
        default=None,
        metavar="INPUT",
        help="folder/.txt/.md/.csv/.jsonl/.json, or a saved graph (not with --root)",
    )
    s.add_argument(
        "--root",
        type=Path,
        default=None,
        metavar="PROJECT",
        help="an MS GraphRAG project: read its settings.yaml (input, chunking, encoding model, extraction prompt, "
        "gleanings); write PROJECT/g2cons/ (input/, settings.yaml, report, concept graph in graph/)",
    )
    s.add_argument(
        "--host",
        choices=["graphrag", "lightrag"],
        default=None,
        help="chunk and price as this host does (graphrag: with --root; lightrag: its defaults and prompt)",
    )
    s.add_argument(
        "--encoding-model",
        default=None,
        help="override the host's tiktoken encoding (GraphRAG: chunking.encoding_model; LightRAG: o200k_base): a name "
        "(cl100k_base and o200k_base are bundled, offline) or the path of a .tiktoken file",
    )


def _selection_args(s: Any) -> None:
    """What to keep, and where to write it."""
    s.add_argument("--kappa", type=share, default=0.8, help="share to keep (default 0.8)")
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


def _cost_args(s: Any) -> None:
    """What the host's LLM calls cost (the report's savings)."""
    s.add_argument(
        "--price-per-mtok",
        type=price,
        default=None,
        help="LLM input price in USD per 1M tokens (default: the list price of the model the host's settings.yaml "
        "names, else 0.15, gpt-4o-mini's; the report says which)",
    )
    s.add_argument(
        "--prompt-tokens-per-call",
        type=count,
        default=None,
        help="tokens of the host's extraction prompt sent with every chunk: kappa by tokens and the cost count it "
        "(default: counted from the host's prompt with --root/--host, else 0)",
    )
    s.add_argument(
        "--price-out-per-mtok",
        type=price,
        default=None,
        help="LLM output price in USD per 1M tokens (with --output-tokens-per-call)",
    )
    s.add_argument(
        "--output-tokens-per-call",
        type=count,
        default=None,
        help="tokens one extraction call returns (an estimate; for the output cost)",
    )


def _output_args(s: Any) -> None:
    """The concept graph, the report and the picture."""
    s.add_argument(
        "--graph",
        type=Path,
        default=None,
        metavar="DIR",
        help="where to save the concept graph (default: OUTPUT.g2cons beside the output)",
    )
    s.add_argument("--report", type=Path, default=None, help="where to write selection_report.json")
    s.add_argument("--json", action="store_true", help="print the report as JSON instead of the summary")
    s.add_argument(
        "--plot",
        type=Path,
        default=None,
        metavar="FILE",
        help="draw the selection (tokens kept per document; concept coverage vs kappa): .png, .svg or .html",
    )
