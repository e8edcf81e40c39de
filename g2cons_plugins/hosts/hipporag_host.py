"""A real HippoRAG (``hipporag`` package, HippoRAG 2) object as the host KG (``--host hipporag:SAVE_DIR``).

HippoRAG 2 (``OSU-NLP-Group/HippoRAG``, ``src/hipporag/HippoRAG.py``) indexes passages with ``index(docs)`` (OpenIE
by its LLM, passage / entity / fact embeddings, the graph) and answers ``retrieve(queries, num_to_retrieve)`` with
one ``QuerySolution`` per query: ``docs`` (the passage texts, best first) and ``doc_scores``. This host only
translates: ``build`` indexes the kept chunks' texts (and deletes, with ``delete(docs)``, the chunks a previous
build indexed that the new selection drops, so the KG is the selection's), ``retrieve`` maps the returned passages
back to the index's chunk ids by their text (white space collapsed). A passage no chunk of the index has (an object
indexed with other texts) comes back as a text-only item. ``hipporag`` is imported only when this host makes the
object itself (it pulls torch and vLLM); pass an object you built (``hipporag=HippoRAG(...)``) to skip that.

Cost columns: HippoRAG's own LLM calls are not metered here; they are estimated as ``calls_per_chunk`` calls per
kept chunk (2: HippoRAG 2's OpenIE makes an NER call and a triple call per passage), each sending the chunk's tokens
plus ``prompt_tokens_per_call``; output tokens are not known (0). A chunk HippoRAG already had (its OpenIE cached)
is counted too: the columns are what the selection's KG costs, not what this run paid.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..fusion.items import HostItem
from ..snapshot import capped_query
from .protocol import HostBuildCost
from .registry import option_flag

if TYPE_CHECKING:
    from ..index import G2ConSIndex
    from ..selection import SelectionReport

__all__ = ["HippoRAGHost", "hipporag_host"]

_WS = re.compile(r"\s+")
DEFAULT_PROMPT_TOKENS = 112  # as the other hosts: a triple-extraction prompt without the text (cl100k), an estimate


def _key(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _make_hipporag(options: Mapping[str, Any]) -> Any:
    """``hipporag.HippoRAG(**options)``, imported now (never at module level)."""
    try:
        module = importlib.import_module("hipporag")
    except ImportError as e:
        raise InputError(
            "host hipporag needs the hipporag package (pip install hipporag; it pulls torch and vLLM), "
            f"or pass a HippoRAG object as hipporag=...: {e}"
        ) from e
    try:
        return module.HippoRAG(**options)
    except TypeError as e:
        raise InputError(f"hipporag.HippoRAG refused the options {sorted(options)}: {e}") from e


class HippoRAGHost:
    """``HostKG`` over a ``hipporag.HippoRAG`` object (see the module doc).

    Args:
        hipporag: a ``HippoRAG`` object (or anything with ``index(docs)``, ``retrieve(queries, num_to_retrieve)``
            and, for rebuilds, ``delete(docs)``); default: one made at the first build from ``path`` and
            ``hipporag_options``.
        path: the ``save_dir`` of the object made here (``--host hipporag:SAVE_DIR``).
        limit: passages asked per query (``num_to_retrieve``).
        index_on_build: index the kept chunks at ``build`` (default). ``False``: the object is used as it is (already
            indexed elsewhere); ``build`` only records the index for the id mapping.
        calls_per_chunk, prompt_tokens_per_call: the cost estimate (module doc).
        **hipporag_options: passed to ``hipporag.HippoRAG`` (``llm_model_name``, ``embedding_model_name``, ...).
    """

    def __init__(
        self,
        hipporag: Any = None,
        path: str | None = None,
        limit: int = 50,
        index_on_build: bool = True,
        calls_per_chunk: int = 2,
        prompt_tokens_per_call: int = DEFAULT_PROMPT_TOKENS,
        **hipporag_options: Any,
    ) -> None:
        if hipporag is not None and not callable(getattr(hipporag, "retrieve", None)):
            raise InputError(
                f"hipporag must be a hipporag.HippoRAG object (with retrieve(queries, num_to_retrieve)), got "
                f"{type(hipporag).__name__}"
            )
        if hipporag is not None and (path is not None or hipporag_options):
            raise InputError("give either a hipporag object or the options to make one (path, ...), not both")
        for name, value, low in (("limit", limit, 1), ("calls_per_chunk", calls_per_chunk, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"{name} must be an int >= {low}, got {value!r}")
        if isinstance(prompt_tokens_per_call, bool) or not isinstance(prompt_tokens_per_call, int):
            raise InputError(f"prompt_tokens_per_call must be an int, got {prompt_tokens_per_call!r}")
        if isinstance(index_on_build, str):  # --host-option index_on_build=false
            index_on_build = option_flag("index_on_build", index_on_build)
        self.name = "hipporag"
        self.label = (
            "HippoRAG 2 (the hipporag package): its own OpenIE KG and retrieval (facts, recognition memory, "
            "personalized PageRank); cost columns estimated"
        )
        self.prompt_tokens_per_call = prompt_tokens_per_call
        self.calls_per_chunk = calls_per_chunk
        self.limit = limit
        self.index_on_build = bool(index_on_build)
        self._options = dict(hipporag_options, **({"save_dir": path} if path is not None else {}))
        self._hipporag = hipporag
        self._indexed: dict[str, str] = {}  # text HippoRAG got from this host -> chunk id
        self._ids: dict[str, str] = {}  # collapsed text -> chunk id, over every chunk of the index
        self._index: G2ConSIndex | None = None

    @property
    def hipporag(self) -> Any:
        """The HippoRAG object (made on first use when none was given)."""
        if self._hipporag is None:
            self._hipporag = _make_hipporag(self._options)
        return self._hipporag

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        """Index the kept chunks' texts in HippoRAG (dropping what a previous build indexed and this selection
        does not keep); ``index_on_build=False``: only the id mapping is made."""
        t0 = time.perf_counter()
        hr = self.hipporag
        self._ids = {}
        for c in index.stored.chunks:
            self._ids.setdefault(_key(c.text), c.id)
        kept = {index.chunk(cid).text: cid for cid in selection.kept_ids}
        if self.index_on_build:
            stale = [t for t in self._indexed if t not in kept]
            if stale:
                delete = getattr(hr, "delete", None)
                if not callable(delete):
                    raise InputError(
                        "the hipporag object has no delete(docs): it cannot drop a previous build's chunks"
                    )
                delete(stale)
            new = [t for t in kept if t not in self._indexed]
            if new:
                hr.index(new)
            self._indexed = dict(kept)
        self._index = index
        texts = list(kept)
        calls = self.calls_per_chunk * len(texts)
        tokens = int(sum(index.count_tokens(texts))) if texts else 0
        return HostBuildCost(
            calls=calls,
            input_tokens=self.calls_per_chunk * tokens + self.prompt_tokens_per_call * calls,
            output_tokens=0,
            chunks=len(texts),
            seconds=round(time.perf_counter() - t0, 3),
            llm=True,
            graph=self._graph_info(hr),
        )

    @staticmethod
    def _graph_info(hr: Any) -> dict[str, int]:
        info = getattr(hr, "get_graph_info", None)
        try:
            got = info() if callable(info) else {}
        except Exception:  # the object's own bookkeeping: counts are informative only
            return {}
        return {str(k): int(v) for k, v in dict(got).items() if isinstance(v, int) and not isinstance(v, bool)}

    def retrieve(self, query: str) -> list[HostItem]:
        """HippoRAG's passages for ``query``, best first, as chunk ids of the index (text-only where none has that
        text), with its scores."""
        if self._index is None:
            raise InputError("the host KG is not built yet: call build(index, index.select(kappa=...)) first")
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string")
        got = self.hipporag.retrieve([capped_query(query)], num_to_retrieve=self.limit)
        if isinstance(got, tuple):  # (solutions, metrics) when the object evaluates retrieval
            got = got[0]
        if not isinstance(got, Sequence) or len(got) != 1:
            raise InputError(f"hipporag retrieve returned {type(got).__name__}, not one QuerySolution for one query")
        docs = getattr(got[0], "docs", None)
        if docs is None or isinstance(docs, str):
            raise InputError("hipporag retrieve returned a solution without a list of docs")
        scores = getattr(got[0], "doc_scores", None)
        scores = [None] * len(docs) if scores is None else [float(s) for s in scores]
        out = []
        seen: set[str] = set()
        for text, score in zip(docs, scores, strict=False):
            cid = self._ids.get(_key(str(text)))
            if cid is not None:
                if cid in seen:
                    continue
                seen.add(cid)
                out.append(HostItem(chunk_id=cid, score=score))
            else:
                out.append(HostItem(text=str(text), score=score))
        return out[: self.limit]


def hipporag_host(path: str | None = None, **options: Any) -> HippoRAGHost:
    """Entry point ``hipporag`` (``--host hipporag:SAVE_DIR``, ``--host-option llm_model_name=...``)."""
    return HippoRAGHost(path=path, **options)
