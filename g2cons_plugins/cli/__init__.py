"""``g2cons`` command line: ``eval`` (benchmark), ``build``, ``select``, ``query``, ``fuse``, ``add``, ``remove``,
``export``, ``show``.

    g2cons eval --corpus C.jsonl --questions Q.jsonl --methods dense,bm25,keyword,concept,concept-paper \\
        --budgets 2000,4000,12000 --embedder minilm --out results.json
    g2cons select ragtest/input --kappa 0.8 --out ragtest/input_core     # MS GraphRAG input folder -> core folder
    g2cons build docs.csv --graph g/ ; g2cons query g/ "question" --budget 4000 --json
    g2cons fuse g/ "question" --host host.json ; g2cons add g/ new.txt ; g2cons remove g/ old.txt

One module per subcommand family (:mod:`.eval`, :mod:`.select`, :mod:`.index_cmds`, :mod:`.graph_cmds`), shared
helpers in :mod:`._common`; reading, chunking and writing the host's input formats live in
:mod:`g2cons_plugins.hosts.pipelines.corpus_io`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Sequence

from ..errors import G2ConSError
from . import eval as _eval
from . import graph_cmds as _graph
from . import index_cmds as _index
from . import select as _select
from ._common import fusion_opts, saved_kappa

__all__ = ["build_parser", "fusion_opts", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``g2cons`` argument parser with all subcommands."""
    p = argparse.ArgumentParser(
        prog="g2cons",
        description="G2ConS concept graph for Graph-RAG (offline): pick the core chunks before an LLM-driven "
        "KG build, retrieve along concepts, fuse with a host's context.",
    )
    from .. import __version__

    p.add_argument("--version", action="version", version=f"g2cons {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{eval,build,select,query,fuse,add,remove,export,show}")
    _eval.register(sub)
    _index.register_build(sub)
    _select.register(sub)
    _index.register_query(sub)
    _index.register_fuse(sub)
    _index.register_add(sub)
    _index.register_remove(sub)
    _graph.register_export(sub)
    _graph.register_show(sub)
    sub.choices["show"].set_defaults(prepare=saved_kappa)  # --kappa not given: the one select used
    return p


def _plain_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """A warning as the command line prints it: one plain line (no class name, no source file, no source line)."""
    return f"g2cons: warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``g2cons`` command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit status.
    Warnings raised while it runs are printed as one plain line each (``g2cons: warning: ...``); the caller's
    warning format is restored on return (and a caller recording warnings still records them)."""
    before = warnings.formatwarning
    warnings.formatwarning = _plain_warning
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = before


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        prepare = getattr(args, "prepare", None)  # defaults that depend on the inputs (show: the saved kappa)
        if prepare is not None:
            prepare(args)
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
