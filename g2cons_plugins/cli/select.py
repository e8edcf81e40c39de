"""``g2cons select``: keep the core chunks of a host's input and write them back in the input's format."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..outputs import (
    atomic_write_text,
    check_disjoint,
    check_replaceable_file,
    json_stamp,
    record_written,
    sha256_file,
    staged_folder,
)
from ..pipelines.corpus_io import _check_writable
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
    if out is not None:
        _write_owned(out, json.dumps({**json_stamp("select report"), **rep.to_dict()}, indent=2))
    return 0


def _write_owned(path: Path, text: str) -> None:
    """Write a file atomically (a stamped report: a rerun recognises it); an earlier version's marker in its
    folder, if any, is kept up to date, and none is created."""
    digest = atomic_write_text(path, text)
    record_written(path.parent, {path.name: digest}, "select")


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


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _profile(args: argparse.Namespace) -> Any:
    """The host's settings (``--root`` / ``--host``), or None for plain ``select``."""
    from ..pipelines.host_projects import lightrag_profile, read_graphrag

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


def cmd_select(args: argparse.Namespace) -> int:
    from ..pipelines.corpus_io import check_output, default_report_path, detect_kind, write_selection

    t0 = time.perf_counter()
    if args.price_out_per_mtok is not None and args.output_tokens_per_call is None:
        raise InputError("--price-out-per-mtok needs --output-tokens-per-call (the tokens one extraction call returns)")
    prof = _profile(args)
    if args.input is None and prof is None:
        raise InputError("select needs INPUT (a folder or file) or --root PROJECT (an MS GraphRAG project)")
    inp = Path(args.input) if args.input is not None else prof.input_path
    if prof is None and _is_index_dir(inp):
        return _select_saved_graph(args)
    root = prof.root if prof is not None and prof.host == "graphrag" else None
    if args.out is None and not args.dry_run and root is None:
        raise InputError("select needs --out OUTPUT (or --dry-run to only estimate)")
    size, overlap = _chunking(
        args, {} if prof is None else {"chunk_tokens": prof.chunk_size, "chunk_overlap": prof.chunk_overlap}
    )
    tok = prof.tokenizer() if prof is not None else None
    # the input as the host reads it
    src_files = None
    out = Path(os.path.abspath(args.out)) if args.out is not None else None  # "." has no name to derive from
    settings_out = core_root = None
    if root is not None:  # a new GraphRAG root for the core run: settings.yaml + input/ (+ report and graph)
        core_root = out or Path(os.path.abspath(root / "g2cons"))
        out = core_root / "input"
        settings_out = core_root / "settings.yaml"
    graph = args.graph or (core_root / "graph" if core_root is not None else None)
    report_path = args.report or (core_root / "selection_report.json" if core_root is not None else None)
    if not args.dry_run:  # every path is checked before anything is read, built or written
        assert out is not None
        kind = detect_kind(inp) if inp.exists() else "folder"
        graph = graph or out.parent / f"{out.name}.g2cons"
        report_path = report_path or default_report_path(kind, out)  # beside the output: a host reads all of it
        inputs: dict[str, Any] = {"INPUT": inp}
        if prof is not None and prof.settings_path is not None:
            inputs[str(prof.settings_path.name)] = prof.settings_path
        if core_root is not None:
            check_disjoint(inputs, {"--out": core_root})
        check_disjoint(
            inputs,
            {
                "--out" if core_root is None else "core input": out,
                "--graph": graph,
                "--report": report_path,
                "settings": settings_out,
            },
        )
    if args.plot is not None:
        from .graph_cmds import check_picture_path

        others = {"--out": core_root or out}
        others.update({k: p for k, p in (("--graph", graph), ("--report", report_path)) if not _under(p, core_root)})
        check_disjoint({"INPUT": inp}, {"--plot": args.plot, **others})
        check_picture_path(args.plot, "--plot")
    if root is not None:  # after the path checks: a refused path is reported before any note on the input
        from ..pipelines.host_projects import graphrag_files

        src_files = graphrag_files(prof)
        if prof.input_type != "text" and len(src_files) != 1:
            raise InputError(f"{inp}: {len(src_files)} {prof.input_type} files match; one is supported")
    if src_files is None:
        corpus = _read_input(args, inp)
    elif prof.input_type == "text":
        from ..pipelines.corpus_io import _read_folder

        corpus = _read_folder(inp, prof.file_encoding, args.skip_empty, _show(args), files=src_files)
    else:
        from ..pipelines.corpus_io import read_corpus

        corpus = read_corpus(src_files[0], prof.text_column, prof.file_encoding, args.skip_empty)
    target = out
    if root is not None and corpus.kind != "folder":
        assert out is not None and src_files is not None
        target = out / src_files[0].name  # the core file keeps the input file's name, in the core folder
    if not args.dry_run:
        assert target is not None and graph is not None and report_path is not None
        if core_root is not None:  # built aside and renamed in, all or nothing: an earlier one must be all ours
            _check_core_root(core_root, args)
            _check_writable(core_root.parent)
        else:
            check_output(corpus, target, report=report_path)
        if not _under(report_path, core_root):
            check_replaceable_file(report_path, "--report")
            _check_writable(report_path.parent)
        if not _under(graph, core_root):
            _check_graph_dir(graph)
    from ..pipelines.corpus_io import chunk_documents

    chunks = chunk_documents(
        corpus.documents, size, overlap, tokenizer=tok, show_progress=_show(args) and len(corpus.documents) > 50
    )
    index = _build_index(args, chunks)
    prompt_tokens = args.prompt_tokens_per_call
    if prompt_tokens is None:
        prompt_tokens = prof.prompt_tokens(tok) if prof is not None else 0
    rep = index.select(
        kappa=args.kappa,
        kappa_by=args.kappa_by,
        selector=args.selector,
        price_per_mtok=args.price_per_mtok,
        prompt_tokens_per_call=prompt_tokens,
    )
    kept_docs = {str(index.chunk(i).metadata.get("source", i)) for i in rep.kept_ids}
    n_files = ""
    report: dict[str, Any] = {
        **json_stamp("select report"),  # first key: a rerun recognises its own report (no marker beside it)
        "input": str(inp),
        "kind": corpus.kind,
        "n_documents": len(corpus.documents),
        "n_documents_kept": len(kept_docs),
        "chunk_tokens": size,
        "chunk_overlap": overlap,
        "tokenizer": index.tokenizer.name,
        "embedder": index.embedder.name,
        "dry_run": bool(args.dry_run),
        "output": None if args.dry_run else str(target),
        "graph": None if args.dry_run else str(graph),
        **rep.to_dict(),
        "graph_stats": index.stats.to_dict(),
    }
    if prof is not None:
        report["host_cost"] = _host_cost(args, prof, chunks, list(rep.kept_ids), tok)
        if settings_out is not None:
            report["settings"] = str(settings_out)
            report["host_command"] = f"graphrag index --root {settings_out.parent}"
    if args.plot is not None:
        _plot_selection(args, index, list(rep.kept_ids))
        report["plot"] = str(args.plot)
    report["seconds"] = round(time.perf_counter() - t0, 3)
    if not args.dry_run:
        assert target is not None and graph is not None and report_path is not None
        report["report"] = str(report_path)
        _info(args, f"writing {len(rep.kept_ids):,} chunks to {target}")
        graph_settings = {
            "input": str(inp),
            "kind": corpus.kind,
            "chunk_tokens": size,
            "chunk_overlap": overlap,
            "text_column": args.text_column,
            "encoding": args.encoding,
            "tokenizer": tok.name if tok is not None else "cl100k_base",
            "selection": {k: report[k] for k in ("kappa", "kappa_by", "selector")},  # g2cons show marks by it
        }
        if core_root is None:
            written = write_selection(
                corpus, index.chunks, rep.kept_ids, target, show_progress=_show(args), report=report_path
            )
            if corpus.kind != "folder":  # the proof a rerun needs to replace the file (no marker beside it)
                report["output_sha256"] = sha256_file(target)
            text = json.dumps(report, indent=2, ensure_ascii=False)
            report_path.parent.mkdir(parents=True, exist_ok=True)
            _write_owned(Path(report_path), text)
            _save_graph(index, graph, graph_settings)
        else:
            assert settings_out is not None
            text = json.dumps(report, indent=2, ensure_ascii=False)
            with staged_folder(core_root, "select --root", lambda: _check_core_root(core_root, args)) as stage:

                def staged(p: Path) -> Path:  # where a path inside the core root is built
                    return stage / Path(os.path.abspath(p)).relative_to(core_root)

                written = write_selection(corpus, index.chunks, rep.kept_ids, staged(target), show_progress=_show(args))
                _write_settings(prof, staged(settings_out), core_root)
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
        n_files = f"{len(written):,} files" if corpus.kind == "folder" else f"{len(rep.kept_ids):,} records"
        report["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(_summary(report))
        if "host_cost" in report:
            print(_host_summary(report["host_cost"]))
        if args.dry_run:
            print("dry run: nothing written")
        else:
            print(f"wrote    {target} ({n_files}), report {report_path}, concept graph {graph}")
            if settings_out is not None:
                print(f"next     {report['host_command']}")
    return 0


def _plot_selection(args: argparse.Namespace, index: Any, kept_ids: list[str]) -> None:
    """``--plot``: tokens kept per document, and the share of concepts the kept chunks cover vs kappa."""
    import numpy as np

    from ..plots import selection_figure
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

    from ..pipelines.host_projects import core_settings

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
    from ..outputs import check_replaceable_folder

    flag = "--out" if args.out is not None else "select --root output"
    check_replaceable_folder(core_root, flag, owned_dir=lambda p: p == core_root / "graph" and _is_cli_graph(p))


def _is_cli_graph(path: Path) -> bool:
    """A concept graph the CLI saved: an index folder with its sidecar and nothing but what those two write."""
    from ..storage.persistence import FILES, FILES_V2, LEGACY_FILES, LOCK, POINTER
    from ._common import SIDECAR

    if not (_is_index_dir(path) and (path / SIDECAR).is_file()):
        return False
    version = re.compile(r"^(\.tmp-)?v-\d{8}T\d{6}-[0-9a-f]{12}$")
    names = {POINTER, LOCK, SIDECAR, *LEGACY_FILES}
    in_version = {"manifest.json", *FILES, *FILES_V2}
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
    s.add_argument(
        "--price-per-mtok",
        type=price,
        default=0.15,
        help="LLM input price in USD per 1M tokens (default 0.15, GPT-4o-mini)",
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
    input_opts(s)
    common_opts(s)
    s.set_defaults(func=cmd_select)
