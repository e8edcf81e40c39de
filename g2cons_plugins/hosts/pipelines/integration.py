"""What the host adapters (``llama-index-retrievers-g2cons``, ``langchain-g2cons``) share, framework-free:

* **incremental selection** (:func:`add_and_select`): new chunks join the concept graph through
  :meth:`G2ConSIndex.add` and are kept or dropped by the same selection rule as the first build;
* **retriever settings on disk** (:func:`save_retriever` / :func:`load_retriever`): the concept graph in
  ``<dir>/g2cons_index`` and every retriever setting in ``<dir>/g2cons_retriever.json`` (atomic writes);
* **per-path numbers** for the hosts' tracing (:func:`fusion_counts`, :func:`selection_counts`);
* **per-call settings** (:func:`resolve_fusion`): one place where a retriever's ``None`` falls back to the config.

How kappa applies to an insert: the selection is re-run with the same ``kappa`` / ``kappa_by`` / ``selector`` over
the whole corpus after the insert (old and new chunks), and a new chunk is kept iff it is in that new top-kappa
set. Earlier decisions are not revisited: chunks already sent to the extractor stay extracted and chunks dropped
before are not sent later, so after many inserts the extracted share can drift from kappa (``kept_ids`` of the
adapters' selectors say what was actually sent; ``report`` is the latest full selection).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...chunks import check_metadata, make_chunks
from ...errors import InputError, PersistError
from ...storage.outputs import atomic_write_text

if TYPE_CHECKING:
    from ...embedders import Embedder
    from ...fusion import FusedItem, FuseOptions
    from ...index import G2ConSIndex
    from ...retrieval import RetrievedItem
    from ...selection import SelectionReport
    from ...text import Tokenizer

__all__ = [
    "DEFAULT_EMBEDDER",
    "INDEX_SUBDIR",
    "SETTINGS_FILE",
    "InsertDecision",
    "add_and_select",
    "atomic_write_text",
    "check_beta",
    "check_metadata",
    "concept_counts",
    "drop_empty",
    "fusion_counts",
    "load_retriever",
    "rank_order_scores",
    "read_settings",
    "resolve_fusion",
    "resolve_rule",
    "save_retriever",
    "save_settings",
    "saved_embedder_name",
    "selection_counts",
    "token_counts",
    "token_length",
]

DEFAULT_EMBEDDER = "auto"  # G2ConSIndex.build: wordllama, or the multilingual model for a non-English corpus
"""The one default embedder of both adapters: the core's static WordLlama model. It ships inside its wheel (no
download, no key), embeds ~12k sentences/s on a CPU and gives the same concept graph whichever host is used. A
host's embedding model (LlamaIndex ``Settings.embed_model``, a LangChain ``Embeddings``) is used when passed as
``embedder=``; LlamaIndex's own default would need an OpenAI key, LangChain has none."""
INDEX_SUBDIR = "g2cons_index"
SETTINGS_FILE = "g2cons_retriever.json"
_FORMAT = "g2cons-retriever"
_VERSION = 1


# ---------------------------------------------------------------------------------------------- incremental
@dataclass(frozen=True)
class InsertDecision:
    """The outcome of :func:`add_and_select`: which of the added chunks go to the host's KG extractor."""

    report: SelectionReport
    """The selection over the whole corpus after the insert (same kappa, kappa_by and selector)."""
    added_ids: list[str]
    """Ids of the chunks added to the concept graph, in input order."""
    kept_ids: list[str]
    """Added chunks that are in the new top-kappa set (send these to the extractor)."""
    dropped_ids: list[str]
    """Added chunks left out (still in the concept graph, still retrievable)."""
    kept_tokens: int = 0
    """Tokens of the kept added chunks (the index's tokenizer)."""
    dropped_tokens: int = 0
    """Tokens of the dropped added chunks."""

    def counts(self, n_chunks: int | None = None) -> dict[str, Any]:
        """The numbers the adapters trace for an insert (same keys as :func:`selection_counts`)."""
        out: dict[str, Any] = {
            "kappa": self.report.kappa,
            "kappa_by": self.report.kappa_by,
            "selector": self.report.selector,
            "incremental": True,
            "n_in": len(self.added_ids),
            "n_kept": len(self.kept_ids),
            "n_dropped": len(self.dropped_ids),
            "kept_tokens": self.kept_tokens,
            "dropped_tokens": self.dropped_tokens,
            "total_tokens": self.kept_tokens + self.dropped_tokens,
        }
        if n_chunks is not None:
            out["n_chunks"] = int(n_chunks)
        return out


def add_and_select(
    index: G2ConSIndex,
    chunks: Iterable[Any],
    kappa: float | None = None,
    kappa_by: str | None = None,
    selector: str | None = None,
    price_per_mtok: float = 0.15,
    prompt_tokens_per_call: int = 0,
    show_progress: bool = False,
) -> InsertDecision:
    """Add ``chunks`` (ids must be new) to ``index`` and decide each one by the selection rule (module doc)."""
    new = make_chunks(chunks)
    index.add(new, show_progress=show_progress)
    report = index.select(
        kappa=kappa,
        kappa_by=kappa_by,
        selector=selector,
        price_per_mtok=price_per_mtok,
        prompt_tokens_per_call=prompt_tokens_per_call,
    )
    kept = set(report.kept_ids)
    ids = [c.id for c in new]
    stored = index.stored
    pos = {c.id: i for i, c in enumerate(stored.chunks)}
    tokens = {i: int(stored.chunk_tokens[pos[i]]) for i in ids}
    return InsertDecision(
        report,
        ids,
        [i for i in ids if i in kept],
        [i for i in ids if i not in kept],
        kept_tokens=sum(tokens[i] for i in ids if i in kept),
        dropped_tokens=sum(tokens[i] for i in ids if i not in kept),
    )


# ---------------------------------------------------------------------------------------------- settings
def resolve_fusion(
    index: G2ConSIndex,
    beta: int | None = None,
    lambda_: float | None = None,
    spill: bool | None = None,
) -> FuseOptions:
    """The settings one fused retrieval uses (per-call value, else the retriever's, else the config's), validated:
    ``None`` values fall back to ``index.config`` (beta, fusion_lambda, fusion_spill); see
    :meth:`g2cons_plugins.fusion.FuseOptions.of`."""
    from ...fusion import FuseOptions

    return FuseOptions.of(index.config, beta=beta, lambda_=lambda_, spill=spill)


def check_beta(value: Any, name: str = "beta") -> int | None:
    """A retriever's token budget as given: ``None`` (the index config's) or a whole number of tokens >= 1
    (``validate.positive_int``: ``2.5``, ``"x"``, ``0``, ``-5`` and ``True`` raise an ``InputError`` naming
    ``name``). Both adapters check ``beta`` with this when a retriever is made and on every per-call override."""
    from ...errors import positive_int

    return None if value is None else positive_int(name, value)


def resolve_rule(index: G2ConSIndex, fusion: str | None, strategy: str | None = None) -> str:
    """A retriever's fusion rule: the one given ("share", "score", "ensemble" or "novel"), else the config's. A rule
    that cannot run with the retriever's ``strategy`` (None: the config's) raises now, naming both (score fusion needs
    a strategy that takes host evidence); nothing falls back to another rule."""
    from ...fusion import FUSIONS, FuseOptions, check_options

    rule = index.config.fusion if fusion is None else fusion
    if rule not in FUSIONS:
        raise InputError(f"fusion must be one of {FUSIONS}, got {rule!r}")
    check_options(FuseOptions.of(index.config, rule=rule, strategy=strategy))
    return rule


def save_retriever(index: G2ConSIndex, path: str | Path, kind: str, settings: Mapping[str, Any]) -> None:
    """Save the concept graph to ``path/g2cons_index`` and ``settings`` (JSON values) with ``kind`` to
    ``path/g2cons_retriever.json``; both writes are atomic, other files in ``path`` are left alone."""
    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    index.save(d / INDEX_SUBDIR)
    save_settings(d, kind, settings)


def save_settings(path: str | Path, kind: str, settings: Mapping[str, Any]) -> None:
    """Write only ``path/g2cons_retriever.json`` (``kind`` and ``settings``, atomically): for a retriever whose
    concept graph is saved by its selector into the same folder (one graph on disk, not two)."""
    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    state = {"format": _FORMAT, "version": _VERSION, "kind": kind, "settings": dict(settings)}
    try:
        text = json.dumps(state, indent=1, sort_keys=True)
    except TypeError as e:
        raise InputError(f"retriever settings must be JSON values: {e}") from None
    atomic_write_text(d / SETTINGS_FILE, text)


def read_settings(path: str | Path) -> tuple[str | None, dict[str, Any]]:
    """``(kind, settings)`` saved by :func:`save_retriever` in ``path``; ``(None, {})`` when there is no settings
    file (a bare index directory, or a retriever saved by an older version)."""
    f = Path(path) / SETTINGS_FILE
    if not f.is_file():
        return None, {}
    try:
        state = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PersistError(f"{f}: unreadable ({e})") from None
    if not isinstance(state, dict):
        raise PersistError(f"{f}: expected a JSON object")
    if state.get("format") != _FORMAT:  # version 0 (LlamaIndex adapter 0.1): flat keys, "kind" among them
        flat = {k: v for k, v in state.items() if k != "kind"}
        return state.get("kind"), flat
    settings = state.get("settings")
    if not isinstance(settings, dict):
        raise PersistError(f"{f}: 'settings' must be a JSON object")
    return state.get("kind"), settings


def load_retriever(
    path: str | Path, embedder: str | Embedder | Any = None, kind: str | None = None
) -> tuple[G2ConSIndex, dict[str, Any]]:
    """The concept graph and the settings saved by :func:`save_retriever`. A ``path`` that is itself an index
    directory (``G2ConSIndex.save``) loads with no settings. ``kind``: the retriever kind expected (a mismatch
    raises, naming both)."""
    from ...index import G2ConSIndex

    d = Path(path)
    saved_kind, settings = read_settings(d)
    if kind is not None and saved_kind is not None and saved_kind != kind:
        raise PersistError(f"{d / SETTINGS_FILE}: saved by a {saved_kind!r} retriever, not a {kind!r} one")
    folder = d / INDEX_SUBDIR if (d / INDEX_SUBDIR).is_dir() else d
    return G2ConSIndex.load(folder, embedder=embedder), settings


def saved_embedder_name(path: str | Path) -> str:
    """The name of the embedder an index saved in ``path`` (a ``G2ConSIndex.save`` folder) was built with, read from
    its manifest without loading it: an adapter gives an index built with the host's embedding model that model
    again on load."""
    from ...storage.persistence import read_manifest

    return str(read_manifest(Path(path))["embedder"]["name"])


# ---------------------------------------------------------------------------------------------- token counts
def token_counts(index: G2ConSIndex, texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts`` with the index's tokenizer, memoised per text like the fusion's own counts (hosts
    and the concept path return the same chunks query after query)."""
    from ...fusion.items import token_counts as counts

    return counts(index.tokenizer, texts)


def token_length(tokenizer: str | Tokenizer | None = None) -> Callable[[str], int]:
    """``len(tokens)`` of a text with the core's tokenizer (default: the bundled tiktoken ``cl100k_base``, offline):
    a splitter's length function (LangChain: ``RecursiveCharacterTextSplitter(chunk_size=200,
    length_function=token_length())``), or the size of an extraction prompt."""
    from ...text import get_tokenizer

    tok = get_tokenizer(tokenizer)

    def length(text: str) -> int:
        return len(tok.encode(text))

    return length


# ---------------------------------------------------------------------------------------------- tracing numbers
def fusion_counts(host_in: int, concept: Sequence[RetrievedItem], fused: Sequence[FusedItem]) -> dict[str, int]:
    """Counts and tokens per path of one fused retrieval: inputs (``host_in``, ``concept_in``), outputs by source
    (``n_host``, ``n_concept``, ``n_both``) and their tokens (``host_tokens``, ...), and ``total_tokens``."""
    out = {"host_in": int(host_in), "concept_in": len(concept), "n_fused": len(fused)}
    for src in ("host", "concept", "both"):
        items = [f for f in fused if f.source == src]
        out[f"n_{src}"] = len(items)
        out[f"{src}_tokens"] = sum(int(f.n_tokens) for f in items)
    out["total_tokens"] = sum(int(f.n_tokens) for f in fused)
    return out


def concept_counts(items: Sequence[RetrievedItem]) -> dict[str, int]:
    """Counts and tokens of one concept-path retrieval."""
    return {"n_concept": len(items), "concept_tokens": sum(int(it.n_tokens) for it in items)}


def selection_counts(report: SelectionReport, n_in: int | None = None) -> dict[str, Any]:
    """What a selection kept and dropped (counts, tokens, kappa), for the hosts' tracing."""
    out: dict[str, Any] = {
        "kappa": report.kappa,
        "kappa_by": report.kappa_by,
        "selector": report.selector,
        "incremental": False,
        "n_kept": len(report.kept_ids),
        "n_dropped": len(report.dropped_ids),
        "kept_tokens": report.kept_tokens,
        "dropped_tokens": report.dropped_tokens,
        "total_tokens": report.total_tokens,
    }
    out["n_in"] = len(report.kept_ids) + len(report.dropped_ids) if n_in is None else int(n_in)
    return out


# ---------------------------------------------------------------------------------------------- adapters' shared rules
def rank_order_scores(scores: Sequence[float]) -> list[float]:
    """Scores made non-increasing in list order: each is the lowest score so far (running minimum). A list already
    sorted best first is unchanged; a score above an earlier one is capped at it, so the order is the rank order."""
    out: list[float] = []
    low = float("inf")
    for s in scores:
        low = min(low, float(s))
        out.append(low)
    return out


def _short_repr(value: Any) -> str:
    """A short ``repr`` of any object (bounded work and length; never raises)."""
    import reprlib

    try:
        return reprlib.repr(value)[:80]
    except Exception:  # a broken __repr__
        return f"<{type(value).__name__}>"


def drop_empty(
    items: Sequence[Any],
    texts: Sequence[str],
    source: Callable[[int], str],
    skip_empty: bool,
    who: str,
    kind: str,
    prefix: str = "",
) -> list[Any]:
    """``items`` without those whose text is empty or whitespace only (the core refuses them): with ``skip_empty``
    they are dropped and counted in one ``UserWarning``, else an ``InputError`` names the first by ``source(pos)``
    (the user's terms: document, file, position; after ``prefix`` in the error unless it already starts with
    ``kind``), never an id a splitter made up.
    ``kind``: "document" / "node". A text that is not a ``str`` (None, a number, bytes, a list) raises an
    ``InputError`` naming its item the same way."""
    import warnings

    for p, t in enumerate(texts):
        if not isinstance(t, str):  # None, a number, bytes, a list...: the core takes text only
            shown = _short_repr(t)
            raise InputError(f"{who}: {prefix}{source(p)} has text of type {type(t).__name__} ({shown}), not str")
    empty = [p for p, t in enumerate(texts) if not t.strip()]
    if not empty:
        return list(items)
    sources = list(dict.fromkeys(source(p) for p in empty))
    listed = "; ".join(sources[:3]) + ("; ..." if len(sources) > 3 else "")
    if not skip_empty:
        more = f" ({len(empty)} empty {kind}s in all: {listed})" if len(empty) > 1 else ""
        first = source(empty[0])
        lead = "" if first.startswith(kind) else prefix  # "a node of document 'd'", never "a node of node 'n'"
        raise InputError(
            f"{who}: {lead}{first} has no text (empty or whitespace only){more}; "
            "remove it or pass skip_empty=True to skip empty ones"
        )
    warnings.warn(f"{who} skipped {len(empty)} empty {kind}(s) ({listed})", UserWarning, stacklevel=3)
    gone = set(empty)
    return [x for p, x in enumerate(items) if p not in gone]
