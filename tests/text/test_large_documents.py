"""A document of any size splits into sentences in time linear in its size: Punkt reads at most
``PUNKT_WINDOW`` characters at once (NLTK 3.10 stops any one of its regular-expression matches after 5 s, which a
4 MB block of short sentences exceeded), the windows give the sentences one pass gives, and a multi-megabyte
document goes through the core's chunking and both adapters' selectors.

The default size keeps the run short on a busy machine; ``G2CONS_LARGE_DOC_MB=10`` runs the same checks on a
10 MB document (measured: see the note of the change)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2cons_plugins import G2ConSIndex
from g2cons_plugins import text as text_mod
from g2cons_plugins.chunks import Chunk, split_units
from g2cons_plugins.config import G2ConSConfig
from g2cons_plugins.text import PUNKT_WINDOW, get_tokenizer, split_sentences

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
SENTENCE = "Alice Smith founded Acme in Paris. "
SIZE_MB = float(os.environ.get("G2CONS_LARGE_DOC_MB", "1"))


def _big(mb: float = SIZE_MB) -> str:
    return SENTENCE * int(mb * 1_000_000 / len(SENTENCE))


def _no_space(s: str) -> str:
    return re.sub(r"\s+", "", s)


def test_punkt_never_reads_more_than_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Punkt is given at most ``PUNKT_WINDOW`` characters a call, however long the block (one 1 MB paragraph)."""
    real = text_mod._punkt()
    seen: list[int] = []

    def recording() -> Callable[[str], list[tuple[int, int]]]:
        def split(piece: str) -> list[tuple[int, int]]:
            seen.append(len(piece))
            return real(piece)

        return split

    monkeypatch.setattr(text_mod, "_punkt", recording)
    doc = _big(1.0)
    out = split_sentences(doc)
    assert max(seen) <= PUNKT_WINDOW and len(seen) >= len(doc) // PUNKT_WINDOW
    assert out == [SENTENCE.strip()] * doc.count(SENTENCE)


def test_windows_give_the_sentences_of_one_pass() -> None:
    """On real passages joined into one block (no blank line), reading by windows changes no sentence."""
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    block = "\n".join(f"{r['title']}\n{r['text']}" for r in rows[:120])
    whole = split_sentences(block, window=len(block) + 1)
    assert len(whole) > 300
    for window in (2_000, 5_000, PUNKT_WINDOW):
        assert split_sentences(block, window=window) == whole, window


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=3_000), window=st.integers(64, 700))
def test_windows_keep_every_character(text: str, window: int) -> None:
    """Whatever the text and window, the sentences hold every non-space character of the text, in order."""
    out = split_sentences(text, window=window)
    assert _no_space("".join(out)) == _no_space(text)
    assert all(s == s.strip() and s for s in out)


def test_a_large_document_splits_in_linear_time() -> None:
    """CPU time of 8x the text stays within 16x (linear with room for noise; a quadratic split gives ~64x)."""
    small, large = _big(0.1), _big(0.8)
    split_sentences(small)  # load the model first
    t0 = time.process_time()
    split_sentences(small)
    t1 = time.process_time()
    split_sentences(large)
    t2 = time.process_time()
    assert (t2 - t1) <= 16 * max(t1 - t0, 0.01), (t1 - t0, t2 - t1)


def test_a_large_document_through_the_core_and_both_adapters() -> None:
    """One document of ``G2CONS_LARGE_DOC_MB`` megabytes (default 1) of short sentences is chunked into units by
    the core and selected by both adapters' selectors."""
    doc = _big()
    cfg = G2ConSConfig()
    units = split_units(Chunk("big", doc), get_tokenizer(), cfg.graph.unit_tokens)
    assert _no_space("".join(u.text for u in units)) == _no_space(doc)
    assert all(u.n_tokens <= cfg.graph.unit_tokens for u in units) and len(units) > 1
    others = [{"id": f"o{i}", "text": f"Bob Jones {i} lives in Rome. He met Alice Smith."} for i in range(5)]
    index = G2ConSIndex.build([{"id": "big", "text": doc}, *others], embedder="hash")
    assert {u.parent_id for u in index.units} == {"big", *(o["id"] for o in others)}

    lc = pytest.importorskip("langchain_g2cons")
    from langchain_core.documents import Document

    lc_sel = lc.CoreChunkSelector(kappa=1.0, embedder="hash")
    kept = lc_sel.transform_documents(
        [Document(page_content=doc, id="big")] + [Document(page_content=o["text"], id=o["id"]) for o in others]
    )
    assert "big" in {d.id for d in kept}

    li = pytest.importorskip("llama_index.retrievers.g2cons")
    from llama_index.core.schema import TextNode

    li_sel = li.CoreChunkSelector(kappa=1.0, kappa_by="chunks", embedder="hash")
    nodes = li_sel([TextNode(id_="big", text=doc)] + [TextNode(id_=o["id"], text=o["text"]) for o in others])
    assert "big" in {n.node_id for n in nodes}


def test_a_long_text_without_spaces_is_cut_at_its_sentence_ends() -> None:
    """Chinese text (no spaces; Punkt knows no 。): windows are cut after a full-width sentence end, so every
    sentence comes out whole."""
    sentence = "居里夫人出生于华沙。"
    doc = sentence * (3 * PUNKT_WINDOW // len(sentence))
    assert split_sentences(doc) == [sentence] * doc.count(sentence)
