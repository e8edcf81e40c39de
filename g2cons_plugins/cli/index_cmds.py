"""``g2cons build``, ``query``, ``fuse``, ``add`` and ``remove``: a saved concept graph from the command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..hosts.pipelines.corpus_io import _check_writable, check_text, path_id
from ..hosts.pipelines.integration import rank_order_scores
from ..storage.outputs import check_disjoint, recover_interrupted
from ._common import (
    FMT,
    _build_index,
    _check_graph_dir,
    _chunking,
    _read_sidecar,
    _save_graph,
    _save_new_graph,
    _show,
    _stream_input,
    common_opts,
    fusion_opts,
    input_opts,
    positive,
)


# ---------------------------------------------------------------------------------------------- build
def cmd_build(args: argparse.Namespace) -> int:
    from ..hosts.pipelines.corpus_io import document_chunks

    t0 = time.perf_counter()
    check_disjoint({"INPUT": args.input}, {"--graph": args.graph})
    if args.cpus_per_worker is not None and args.engine != "ray":
        raise InputError(f"--cpus-per-worker is for --engine ray, not --engine {args.engine}")
    if args.dry_run:  # read the input (a document at a time), print the cost model's figures, write nothing
        from .estimate import estimate, report, tokens_of

        size, overlap = _chunking(args)
        stream = _stream_input(args, args.input)
        tokens = tokens_of((d.text for d in stream), size, overlap)
        print(report(estimate(tokens), stream.state.documents, args.embedder))
        return 0
    recover_interrupted(args.graph)  # what a build killed earlier left beside --graph (said in one line)
    _check_graph_dir(args.graph)
    size, overlap = _chunking(args)
    if _show(args):  # what the cost model expects, before the long part starts
        from .estimate import estimate, one_line

        print(one_line(estimate(_estimated_tokens(args, size, overlap))), file=sys.stderr)
    # read, chunked and stored a document at a time: the corpus is never held as Python objects
    stream = _stream_input(args, args.input)
    index = _build_index(args, document_chunks(stream, size, overlap))
    settings = {
        "input": str(args.input),
        "kind": stream.kind,
        "chunk_tokens": size,
        "chunk_overlap": overlap,
        "text_column": args.text_column,
        "encoding": args.encoding,
    }
    _save_new_graph(index, args.graph, settings)
    print(index.stats)
    print(
        f"{stream.state.documents:,} documents -> {len(index.chunks):,} chunks; graph saved to {args.graph} "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    return 0


#: The bytes of the input read to estimate its tokens before a build (:func:`_estimated_tokens`).
SAMPLE_BYTES = 8 << 20


def _estimated_tokens(args: argparse.Namespace, size: int, overlap: int) -> float:
    """The input's tokens as the cost model counts them, without reading a large input twice: the documents in
    its first :data:`SAMPLE_BYTES`, scaled to its size in bytes (all of it when smaller). An error in them is
    the one the build would meet; their warnings are left to the build."""
    from ..hosts.pipelines.corpus_io import stream_corpus
    from .estimate import tokens_of

    stream = stream_corpus(args.input, args.text_column, args.encoding, args.skip_empty, False)
    total = stream.input_bytes()

    def sample() -> Iterator[str]:
        for d in stream:
            yield d.text
            if SAMPLE_BYTES <= stream.state.bytes_read < total:
                return

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokens = tokens_of(sample(), size, overlap)
    read = stream.state.bytes_read
    return tokens * total / read if 0 < read < total else tokens


# ---------------------------------------------------------------------------------------------- query
def cmd_query(args: argparse.Namespace) -> int:
    from ..index import G2ConSIndex

    check_text(args.question, "QUESTION", "the question")
    index = G2ConSIndex.load(args.graph)
    items = index.retrieve(args.question, beta=args.budget)
    # the core's order is its rank (seed passages, then bridged ones), not its score: the rank-order score (each
    # capped by those above, as the adapters give it) never increases down the list; the core's score beside it
    ranked = rank_order_scores([x.score for x in items])
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "rank": k,
                        "unit_id": x.unit_id,
                        "chunk_id": x.parent_id,
                        "score": x.score,
                        "rank_score": r,
                        "n_tokens": x.n_tokens,
                        "reason": x.reason,
                        "text": x.text,
                    }
                    for k, (x, r) in enumerate(zip(items, ranked, strict=True), 1)
                ],
                indent=2,
            )
        )
    else:
        for k, (x, r) in enumerate(zip(items, ranked, strict=True), 1):
            core = "" if r == x.score else f" (concept score {x.score:.3f})"
            via = x.reason.get("via")
            print(f"{k:>2}. [{x.parent_id}] {x.n_tokens} tok, score {r:.3f}{core}, {via}: {x.text[:100]!r}")
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


def _resolve_host(args: argparse.Namespace, raw: list[Any], index: Any) -> list[dict[str, Any]]:
    """Validate the host's items and give id-only items their text from the graph.

    Every item is a string (its text) or an object with ``chunk_id`` (or ``id``) and/or ``text``, optionally
    ``score``; ``n_tokens`` is recounted, never trusted. An id-only item whose id is a chunk of the graph gets that
    chunk's text; an unknown id is left out with a warning naming it (nothing is dropped silently)."""
    texts = {c.id: c.text for c in index.chunks}
    out: list[dict[str, Any]] = []
    unknown: list[str] = []
    for pos, it in enumerate(raw):
        where = f"{args.host} item #{pos}"
        if isinstance(it, str):
            it = {"text": it}
        if not isinstance(it, dict):
            raise InputError(f"{where}: expected an object with chunk_id and/or text, or a string")
        cid = it.get("chunk_id", it.get("id"))
        text = it.get("text")
        if cid is not None and (isinstance(cid, bool) or not isinstance(cid, (str, int))):
            raise InputError(f"{where}: chunk_id must be a string, got {type(cid).__name__}")
        if text is not None and not isinstance(text, str):
            raise InputError(f"{where}: text must be a string, got {type(text).__name__}")
        score = it.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise InputError(f"{where}: score must be a number, got {type(score).__name__}")
        cid = None if cid is None else str(cid)
        if text is None or not text.strip():
            if cid is None:
                raise InputError(f"{where}: has neither a chunk_id nor text")
            if cid not in texts:
                unknown.append(cid)
                continue
            text = texts[cid]
        check_text(text, where)
        item: dict[str, Any] = {"text": text, "score": score, "metadata": it.get("metadata") or {}}
        if cid is not None:
            check_text(cid, where, "chunk_id")
            item["chunk_id"] = cid
        out.append(item)
    if unknown:
        print(
            f"g2cons: warning: {len(unknown)} host item(s) with an id but no text name no chunk of {args.graph}, "
            f"left out: {unknown[:5]}",
            file=sys.stderr,
        )
    return out


def cmd_fuse(args: argparse.Namespace) -> int:
    from ..fusion import FuseOptions, check_options, fuse_context
    from ..index import G2ConSIndex

    check_text(args.question, "QUESTION", "the question")
    replay = args.host.split(":", 1)[1] if args.host.startswith(REPLAY_PREFIXES) else None
    raw = None if replay is not None else _read_host(Path(args.host))
    index = G2ConSIndex.load(args.graph)
    options = FuseOptions.of(
        index.config,
        rule=args.fusion,
        beta=args.budget,
        lambda_=args.lambda_,
        spill=args.spill,
        host_weight=args.host_weight,
    )
    check_options(options)  # a rule the graph's strategy cannot run is refused before the host is read
    if replay is not None:
        host: list[Any] = _replay_items(index, replay, args)
    else:
        assert raw is not None
        host = _resolve_host(args, raw, index)
    report = fuse_context(index, host, args.question, options)
    fused = report.items
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
            name = f.chunk_id if f.chunk_id is not None else "(host text, no chunk of the graph)"
            unscored = f.source == "host" and f.host is not None and f.host.score is None and not f.score
            score = "no score given" if unscored else f"score {f.score:.3f}"
            print(f"[{f.source}] {name} {f.n_tokens} tok, {score}: {f.text[:100]!r}")
    print(
        f"fused {len(fused)} items, {used:,} tokens <= budget {args.budget:,} "
        f"(both {counts['both']}, host {counts['host']}, concept {counts['concept']}; rule {report.rule})",
        file=sys.stderr,
    )
    given = len(raw) if raw is not None else report.host_items
    left = f", {given - report.host_items} left out (an id naming no chunk, above)" if given > report.host_items else ""
    print(f"host items: {given} given, {report.contributed} contributed{left}", file=sys.stderr)
    for reason, n in report.dropped.items():
        print(f"  not placed: {n} ({reason}), e.g. {report.dropped_examples.get(reason, [])}", file=sys.stderr)
    return 0


REPLAY_PREFIXES = ("replay:", "replay-core:", "graph-walk:")


def _replay_items(index: Any, path: str, args: argparse.Namespace) -> list[Any]:
    """The host items a replayed extraction (``--host replay:PATH``) gives for the question: the graph you already
    built (every chunk the extraction covers), retrieved without an LLM (g2cons_plugins.hosts.ReplayHost; with
    ``--host graph-walk:PATH``, HippoRAG 2's graph walk, g2cons_plugins.hosts.GraphWalkHost)."""
    from ..hosts import GraphWalkHost, ReplayHost

    host: Any = GraphWalkHost(path) if args.host.startswith("graph-walk:") else ReplayHost(path)
    cost = host.build(index, index.select(kappa=1.0))
    print(f"host: {host.label} ({cost.chunks:,} chunks of the graph covered)", file=sys.stderr)
    return list(host.retrieve(args.question))


# ---------------------------------------------------------------------------------------------- add / remove
def cmd_add(args: argparse.Namespace) -> int:
    from ..hosts.pipelines.corpus_io import chunk_documents, read_many
    from ..index import G2ConSIndex

    t0 = time.perf_counter()
    check_disjoint({"FILES": args.files}, {"DIR": args.graph})
    _check_writable(args.graph.parent)
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
    have = {c.id for c in index.chunks}
    clash = sorted({c.id for c in chunks} & have)
    if clash:  # before any embedding
        raise InputError(f"already in {args.graph}: {clash[:5]}; remove them first (g2cons remove DIR ID)")
    before = len(index.chunks)
    index.add(chunks, show_progress=_show(args))
    if args.refresh:
        index.refresh()
    _save_graph(index, args.graph, {**saved, "chunk_tokens": size, "chunk_overlap": overlap})
    print(index.stats)
    print(
        f"added {len(docs):,} documents ({len(chunks):,} chunks): {before:,} -> {len(index.chunks):,} chunks "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from ..index import G2ConSIndex

    index = G2ConSIndex.load(args.graph)
    ids = {c.id for c in index.chunks}
    by_source: dict[str, list[str]] = {}
    for c in index.chunks:
        by_source.setdefault(str(c.metadata.get("source", c.id)), []).append(c.id)
    drop: list[str] = []
    unknown: list[str] = []
    for raw in args.ids:
        x = raw if raw in ids or raw in by_source else path_id(raw)  # new/./a.txt names what add stored
        if x in ids:
            drop.append(x)
        elif x in by_source:
            drop.extend(by_source[x])
        else:
            unknown.append(raw)
    if unknown:
        raise InputError(f"unknown chunk or document ids: {unknown[:5]} (not in the graph at {args.graph})")
    before = len(index.chunks)
    index.remove(sorted(set(drop)))
    if args.refresh:
        index.refresh()
    _save_graph(index, args.graph, _read_sidecar(args.graph))
    print(index.stats)
    print(f"removed {len(set(drop)):,} chunks: {before:,} -> {len(index.chunks):,} chunks")
    return 0


def register_build(sub: Any) -> None:
    """Add the ``build`` subcommand."""
    b = sub.add_parser(
        "build",
        help="build a concept graph from a folder/CSV/JSONL input and save it",
        description="Read INPUT (folder of .txt/.md, .csv, .jsonl or .json), chunk it like the host, build the "
        "concept graph and save it to --graph DIR.",
        epilog="examples:\n  g2cons build ragtest/input --graph ragtest/concepts --embedder wordllama\n"
        "  g2cons build big/input --graph big/concepts --engine processes   # split on every core\n"
        "  g2cons build big/input --graph big/concepts --engine ray --num-workers 2   # --ray-address ADDR: a cluster",
        formatter_class=FMT,
    )
    b.add_argument("input", type=Path, metavar="INPUT")
    b.add_argument("--graph", required=True, type=Path, metavar="DIR", help="folder to save the graph to")
    b.add_argument(
        "--engine",
        choices=("local", "processes", "ray"),
        default="local",
        help="where splitting, counting and embedding run: here (default), split and count in worker processes "
        "on every core (processes) or on Ray Data (extra [ray]); the graph equals a local build",
    )
    b.add_argument("--ray-address", default=None, metavar="ADDR", help="Ray cluster address (default: a local one)")
    b.add_argument(
        "--num-workers",
        type=positive,
        default=None,
        metavar="N",
        help="worker processes (default: usable cores) or Ray actors per stage",
    )
    b.add_argument(
        "--cpus-per-worker",
        type=positive,
        default=None,
        metavar="K",
        help="with --engine ray: CPUs each actor reserves and embeds with (default 1; the default actor count is "
        "then what the cluster's nodes can hold)",
    )
    b.add_argument(
        "--dry-run",
        action="store_true",
        help="read INPUT and print the build's estimated time, peak memory and disk (a cost model measured with "
        "wordllama on 2 cores); build and write nothing",
    )
    input_opts(b)
    common_opts(b)
    b.set_defaults(func=cmd_build)


def register_query(sub: Any) -> None:
    """Add the ``query`` subcommand."""
    q = sub.add_parser(
        "query",
        help="concept-path retrieval from a saved graph",
        description="Retrieve the concept path for a question under a token budget, with the reason for each chunk.",
        epilog="DIR: a saved graph (select --root PROJECT writes PROJECT/g2cons/graph; build --graph DIR)\n"
        'example:\n  g2cons query ragtest/g2cons/graph "Who founded the APA?" --budget 4000 --json',
        formatter_class=FMT,
    )
    q.add_argument("graph", type=Path, metavar="DIR")
    q.add_argument("question")
    q.add_argument("--budget", type=positive, default=4000, help="token budget (default 4000)")
    q.add_argument("--json", action="store_true", help="print JSON items (chunk_id, score, reason, text)")
    q.set_defaults(func=cmd_query)


def register_fuse(sub: Any) -> None:
    """Add the ``fuse`` subcommand."""
    f = sub.add_parser(
        "fuse",
        help="fuse a host's retrieved context with the concept path under a budget",
        description="Fuse a host's results with the concept path, never more than --budget tokens. Rule "
        "'share' (default): items both paths return first, then each path's best within its share (the host "
        "lambda x budget, scaled by how much its first results agree with the concept path; its first item enters "
        "whenever it fits), then what one path leaves goes to the other; a host chunk of any size contributes its "
        "best units; the context is ordered by fused score. 'score': host chunks are evidence on the concept "
        "path's unit scores; 'ensemble' (the paper's, paper mode): items retrieved by both paths first, host items "
        "at most lambda x budget tokens. Host items not placed are reported with their reason.",
        epilog="HOST: a JSON file, a list of items, each with chunk_id and/or text, optionally score and n_tokens,\n"
        'e.g. [{"chunk_id": "a.txt", "score": 0.9}, {"text": "..."}] (or {"items": [...]});\n'
        "or replay:PATH, the graph you already built: an LLM extraction (our JSONL, HippoRAG OpenIE JSON,\n"
        "an MS GraphRAG output folder, a LightRAG working dir) queried without an LLM; graph-walk:PATH: the\n"
        "same graph walked as HippoRAG 2 walks it (facts -> seed entities -> personalized PageRank).\n"
        'example:\n  g2cons fuse ragtest/g2cons/graph "Who founded the APA?" --host host.json --budget 4000 --json',
        formatter_class=FMT,
    )
    f.add_argument("graph", type=Path, metavar="DIR")
    f.add_argument("question")
    f.add_argument(
        "--host",
        required=True,
        metavar="HOST",
        help="the host's retrieved items (HOST.json), replay:PATH or graph-walk:PATH",
    )
    f.add_argument(
        "--fusion",
        choices=["share", "score", "ensemble", "novel"],
        default=None,
        help="fusion rule (default: the config's, share)",
    )
    f.add_argument(
        "--host-weight", type=float, default=None, help="score fusion: evidence of the host's best chunk (default 0.6)"
    )
    f.add_argument("--budget", type=positive, default=4000, help="token budget beta (default 4000)")
    fusion_opts(f, "of the fused context")
    f.add_argument("--json", action="store_true", help="print JSON items")
    f.set_defaults(func=cmd_fuse)


TRICKLE = (
    "A change of at most 1% of a graph of 2,000+ chunks is a trickle update: only what it touches is recomputed, "
    "and the graph is saved with a log of the updates since its last exact state (a bounded drift until then; a "
    "load replays the log); --refresh saves the exact state instead. A larger change equals a rebuild."
)
REFRESH_HELP = "re-derive after the change and save the exact state, equal to a rebuild (slower; no log to replay)"


def register_add(sub: Any) -> None:
    """Add the ``add`` subcommand."""
    a = sub.add_parser(
        "add",
        help="add documents to a saved graph without a rebuild",
        description="Read FILES (.txt/.md files, folders, .csv, .jsonl, .json), chunk them with the graph's "
        "settings, and add them; nothing already in the graph is embedded again. " + TRICKLE,
        epilog="example:\n  g2cons add ragtest/g2cons/graph new/report.txt new/more_docs/",
        formatter_class=FMT,
    )
    a.add_argument("graph", type=Path, metavar="DIR")
    a.add_argument("files", nargs="+", type=Path, metavar="FILES")
    input_opts(a, defaults=False)
    a.add_argument("--quiet", action="store_true", help="no progress bars")
    a.add_argument("--refresh", action="store_true", help=REFRESH_HELP)
    a.set_defaults(func=cmd_add)


def register_remove(sub: Any) -> None:
    """Add the ``remove`` subcommand."""
    r = sub.add_parser(
        "remove",
        help="remove chunks or whole documents from a saved graph without a rebuild",
        description="Remove by chunk id or by document id (a file's relative path, a record's id): a document "
        "id removes all its chunks. " + TRICKLE,
        epilog="example:\n  g2cons remove ragtest/g2cons/graph new/report.txt 'big.txt#3'   # a document, a chunk",
        formatter_class=FMT,
    )
    r.add_argument("graph", type=Path, metavar="DIR")
    r.add_argument("ids", nargs="+", metavar="IDS")
    r.add_argument("--refresh", action="store_true", help=REFRESH_HELP)
    r.set_defaults(func=cmd_remove)
