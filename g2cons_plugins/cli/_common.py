"""Helpers shared by the ``g2cons`` subcommands: argument types, common options, reading and chunking the
input, building and saving a graph."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence, Sized
from pathlib import Path
from typing import Any, get_args

from ..config import G2ConSConfig
from ..errors import InputError

FMT = argparse.RawDescriptionHelpFormatter


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
        out = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None
    if not out or not all(math.isfinite(x) for x in out):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {s!r}")
    return out


def _number(s: str) -> float:
    try:
        x = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {s!r}")
    return x


def share(s: str) -> float:
    """argparse type: a number in [0, 1] (kappa, lambda)."""
    x = _number(s)
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {s!r}")
    return x


def shares(s: str) -> list[float]:
    """argparse type: comma-separated numbers in [0, 1]."""
    out = _floats(s)
    if any(not 0.0 <= x <= 1.0 for x in out):
        raise argparse.ArgumentTypeError(f"every value must be in [0, 1], got {s!r}")
    return out


def price(s: str) -> float:
    """argparse type: a USD price, finite and >= 0."""
    x = _number(s)
    if x < 0:
        raise argparse.ArgumentTypeError(f"a price must be >= 0, got {s!r}")
    return x


def _int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None


def count(s: str) -> int:
    """argparse type: an integer >= 0 (token counts)."""
    x = _int(s)
    if x < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {s!r}")
    return x


def positive(s: str) -> int:
    """argparse type: an integer >= 1 (budgets)."""
    x = _int(s)
    if x < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {s!r}")
    return x


def _config(args: argparse.Namespace) -> G2ConSConfig:
    unit = None if args.unit_tokens == 0 else args.unit_tokens
    extra: dict[str, Any] = {}
    for item in getattr(args, "set", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {item!r}: expected KEY=VALUE (a G2ConSConfig field)")
        try:
            extra[key.strip()] = json.loads(value)
        except ValueError:
            extra[key.strip()] = value
    lang = {"language": args.language, "segmenter": args.segmenter} if hasattr(args, "language") else {}
    try:
        return G2ConSConfig(mode=args.mode, unit_tokens=unit, **lang, **extra)
    except TypeError as e:  # an unknown field name
        raise InputError(f"--set: {e}") from None


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except ImportError:  # pragma: no cover - Windows
        return float("nan")


# ---------------------------------------------------------------------------------------------- input helpers
SIDECAR = "g2cons_input.json"  # chunking settings of a graph built from the CLI (read back by ``add``)


def _show(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False)


def _info(args: argparse.Namespace, msg: str) -> None:
    if _show(args):
        print(msg, file=sys.stderr)


def _embedder(args: argparse.Namespace) -> Any:
    from ..embedders import get_embedder

    spec = args.embedder
    if spec.strip().lower() == "auto":  # chosen at build from the corpus's language
        return spec
    if spec.strip().lower() == "minilm" and _show(args):
        return get_embedder(spec, show_progress=True)
    return get_embedder(spec)


def _read_input(args: argparse.Namespace, path: Path) -> Any:
    from ..hosts.pipelines.corpus_io import read_corpus

    _info(args, f"reading {path}")
    return read_corpus(
        path,
        text_column=args.text_column,
        encoding=args.encoding,
        skip_empty=args.skip_empty,
        show_progress=_show(args),
    )


def _stream_input(args: argparse.Namespace, path: Path) -> Any:
    """The input's documents read one at a time (:func:`~g2cons_plugins.hosts.pipelines.corpus_io.stream_corpus`),
    with :func:`_read_input`'s checks and errors."""
    from ..hosts.pipelines.corpus_io import stream_corpus

    _info(args, f"reading {path}")
    return stream_corpus(
        path,
        text_column=args.text_column,
        encoding=args.encoding,
        skip_empty=args.skip_empty,
        show_progress=_show(args),
    )


def _chunk(args: argparse.Namespace, docs: Sequence[Any], chunk_tokens: int, chunk_overlap: int) -> list[Any]:
    from ..hosts.pipelines.corpus_io import chunk_documents

    return chunk_documents(docs, chunk_tokens, chunk_overlap, show_progress=_show(args) and len(docs) > 50)


def _chunking(args: argparse.Namespace, saved: dict[str, Any] | None = None) -> tuple[int, int]:
    from ..hosts.pipelines.corpus_io import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_TOKENS, check_chunking

    saved = saved or {}
    size = args.chunk_tokens if args.chunk_tokens is not None else saved.get("chunk_tokens", DEFAULT_CHUNK_TOKENS)
    overlap = (
        args.chunk_overlap if args.chunk_overlap is not None else saved.get("chunk_overlap", DEFAULT_CHUNK_OVERLAP)
    )
    check_chunking(int(size), int(overlap))
    return int(size), int(overlap)


def _is_index_dir(path: Path) -> bool:
    from ..storage.persistence import is_index_dir

    return is_index_dir(path)


def _check_graph_dir(path: Path) -> None:
    """Fail before any work when ``path`` cannot take a saved index: it must be absent, empty, or a graph the
    g2cons command line wrote (a saved index with its ``g2cons_input.json``)."""
    from ..hosts.pipelines.corpus_io import _check_writable

    if path.exists() and not path.is_dir():
        raise InputError(f"--graph {path}: exists and is not a folder; --graph needs a folder")
    if path.is_dir() and any(path.iterdir()) and not (_is_index_dir(path) and (path / SIDECAR).is_file()):
        raise InputError(
            f"--graph {path}: non-empty folder that is not a graph written by the g2cons command line; g2cons never "
            "deletes what it did not create: choose another --graph"
        )
    _check_writable(path.parent)


def _save_graph(index: Any, path: Path, settings: dict[str, Any]) -> None:
    from ..storage.outputs import atomic_write_text

    index.save(path)
    atomic_write_text(path / SIDECAR, json.dumps(settings, indent=2))


def _save_new_graph(index: Any, path: Path, settings: dict[str, Any]) -> None:
    """:func:`_save_graph`, but where no graph is yet (``path`` absent or empty) the graph is saved in a hidden
    sibling first (``.NAME.tmp-*``, stamped: :func:`~g2cons_plugins.storage.outputs.staging_dir`) and renamed into
    place whole, settings included: a build killed at any point leaves no ``path`` rather than a folder the next
    build refuses, and the next build removes the sibling (:func:`~g2cons_plugins.storage.outputs.recover_interrupted`).
    Over a graph of the command line's, the save is a new version of it (atomic), then its settings."""
    import shutil

    from ..storage.outputs import staging_dir

    if _is_index_dir(path):
        _save_graph(index, path, settings)
        return
    tmp = staging_dir(path)
    try:
        _save_graph(index, tmp / path.name, settings)
        os.replace(tmp / path.name, path)  # onto nothing, or an empty folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_SIDECAR_TYPES: dict[str, tuple[type, ...]] = {
    "chunk_tokens": (int,),
    "chunk_overlap": (int,),
    "text_column": (str,),
    "encoding": (str,),
    "input": (str,),
    "kind": (str,),
    "tokenizer": (str,),
}


def _read_sidecar(path: Path) -> dict[str, Any]:
    """The CLI's settings saved beside a graph (``{}`` for a graph saved from Python, without one). A sidecar that
    is not a JSON object, or a known key of the wrong type (``"chunk_tokens": "abc"``), fails naming file and key."""
    file = path / SIDECAR
    if not file.exists():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(f"{file}: cannot read the graph's input settings ({e}); fix or delete the file") from None
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a JSON object of input settings, got {type(data).__name__}")
    data = {k: v for k, v in data.items() if not (k in _SIDECAR_TYPES and v is None)}  # null: not set
    for key, types in _SIDECAR_TYPES.items():
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            want = "an integer >= 0" if types == (int,) else "a string"
            raise InputError(f"{file}: {key} must be {want}, got {value!r}")
        if isinstance(value, int) and value < 0:
            raise InputError(f"{file}: {key} must be an integer >= 0, got {value!r}")
    return data


def saved_kappa(args: argparse.Namespace) -> None:
    """``show`` without ``--kappa``: the selection saved with the graph (``g2cons select`` records its kappa,
    kappa_by and selector in the graph's ``g2cons_input.json``), else kappa 0.8 with the config's rule."""
    from ..config import KappaBy, Selector

    args.kappa_by = args.selector = None
    if getattr(args, "kappa", None) is not None:
        return
    sel = _read_sidecar(Path(args.graph)).get("selection") if Path(args.graph).is_dir() else None
    kappa = 0.8
    if sel is not None:
        k = sel.get("kappa") if isinstance(sel, dict) else sel
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not 0.0 <= k <= 1.0:
            raise InputError(f"{Path(args.graph) / SIDECAR}: selection.kappa must be a number in [0, 1], got {k!r}")
        kappa = float(k)
        for key, allowed in (("kappa_by", get_args(KappaBy)), ("selector", get_args(Selector))):
            value = sel.get(key) if isinstance(sel, dict) else None
            if value is not None and value not in allowed:
                where = Path(args.graph) / SIDECAR
                raise InputError(f"{where}: selection.{key} must be one of {allowed}, got {value!r}")
            setattr(args, key, value)
    args.kappa = kappa


def _build_index(args: argparse.Namespace, chunks: Iterable[Any], tokenizer: Any = None) -> Any:
    """The concept graph over ``chunks`` (a list, or any iterable: the local build reads it once, a chunk at a
    time); ``tokenizer``: the one that chunked them (a host's encoding model), so kappa by tokens, the report and
    later budgets count as the host does (default: the index's)."""
    from ..index import G2ConSIndex

    over = f"{len(chunks):,} chunks" if isinstance(chunks, Sized) else "the chunks as they are read"
    _info(args, f"building the concept graph over {over} (embedder {args.embedder})")
    engine = getattr(args, "engine", "local")
    cpus = getattr(args, "cpus_per_worker", None)
    if engine == "local":
        return G2ConSIndex.build(
            chunks,
            embedder=_embedder(args),
            config=_config(args),
            tokenizer=tokenizer,
            cache_dir=args.cache_dir,
            show_progress=_show(args),
        )
    return G2ConSIndex.build(  # workers rebuild the embedder from its name: pass the name, not an object
        chunks,
        embedder=args.embedder,
        config=_config(args),
        tokenizer=None if tokenizer is None else getattr(tokenizer, "name", tokenizer),
        cache_dir=args.cache_dir,
        show_progress=_show(args),
        engine=_ray_engine(args, cpus) if engine == "ray" and cpus is not None else engine,
        ray_address=args.ray_address,
        num_workers=args.num_workers,
    )


def _ray_engine(args: argparse.Namespace, cpus_per_worker: int) -> Any:
    from ..engine.build_engines import RayEngine

    return RayEngine(address=args.ray_address, num_workers=args.num_workers, cpus_per_worker=cpus_per_worker)


def fusion_opts(p: argparse.ArgumentParser, what: str) -> None:
    """``--lambda`` and ``--spill``: None means the config's (0.4 and on; paper mode 0.6 and off)."""
    p.add_argument(
        "--lambda",
        dest="lambda_",
        type=share,
        default=None,
        help=f"host share of the budget {what} (default: the config's, 0.4; paper mode 0.6)",
    )
    p.add_argument(
        "--spill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"unused budget of one path goes to the other, {what} (default: the config's, on; paper mode off)",
    )


def common_opts(sp_: argparse.ArgumentParser) -> None:
    sp_.add_argument(
        "--embedder",
        default="auto",
        help="auto (wordllama, or multilingual for a corpus mostly not in English when installed) | wordllama | "
        "minilm | multilingual | openai[:model] | hash",
    )
    sp_.add_argument("--mode", default="default", choices=["default", "paper"])
    sp_.add_argument(
        "--language",
        default="auto",
        choices=["auto", "english"],
        help="text analysis: auto = per-sentence language (stop words, Chinese/Japanese segmentation); "
        "english = English analyzer for every text",
    )
    sp_.add_argument(
        "--segmenter", default="auto", choices=["auto", "jieba", "bigram"], help="Chinese word segmentation"
    )
    sp_.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other G2ConSConfig field (VALUE as JSON, else a string); repeatable",
    )
    sp_.add_argument("--unit-tokens", type=count, default=150, help="retrieval unit size; 0 = whole chunks")
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
        type=count,
        default=None,
        help="chunk size in cl100k tokens, as the host chunks (default 1200, MS GraphRAG and LightRAG); "
        "0 = one chunk per document",
    )
    g.add_argument("--chunk-overlap", type=count, default=None, help="token overlap of chunks (default 100)")
