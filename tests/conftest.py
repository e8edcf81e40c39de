"""Shared fixtures. HF_HUB_OFFLINE makes a stray hub call fail fast."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if not os.environ.get("G2CONS_STATE_DIR"):  # g2cons's record of the outputs it wrote: not the user's, in tests
    import tempfile

    os.environ["G2CONS_STATE_DIR"] = tempfile.mkdtemp(prefix="g2cons-state-")

import json
from pathlib import Path

import pytest

from g2cons_plugins.arrays.unit_hnsw import system_cxx_runtime

system_cxx_runtime()  # before any test imports usearch: as the library does (a later ray.init aborted otherwise)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# A small multi-hop corpus: names recur across chunks so concepts co-occur (theta_co) and bridges exist.
CORPUS = [
    ("c1", "Marie Curie was born in Warsaw. Marie Curie studied physics in Paris at the Sorbonne."),
    ("c2", "Pierre Curie married Marie Curie in Paris. Pierre Curie worked on magnetism and crystals."),
    ("c3", "Warsaw is the capital of Poland. Warsaw lies on the Vistula river."),
    ("c4", "The Sorbonne is a university in Paris. The Sorbonne was founded in the 13th century."),
    ("c5", "Marie Curie and Pierre Curie discovered polonium and radium in Paris."),
    ("c6", "Polonium was named after Poland, the homeland of Marie Curie."),
    ("c7", "The Vistula is the longest river in Poland. The Vistula flows into the Baltic Sea."),
    ("c8", "Irene Joliot-Curie was the daughter of Marie Curie and Pierre Curie."),
    ("c9", "Irene Joliot-Curie won the Nobel Prize in Chemistry with Frederic Joliot."),
    ("c10", "Frederic Joliot worked at the Radium Institute in Paris with Irene Joliot-Curie."),
    ("c11", "The Radium Institute in Paris was founded for Marie Curie."),
    ("c12", "The Baltic Sea borders Poland, Sweden and Finland."),
    ("c13", "Stockholm is the capital of Sweden. The Nobel Prize ceremony is held in Stockholm."),
    ("c14", "Helsinki is the capital of Finland and lies on the Baltic Sea."),
    ("c15", "Gdansk is a port city of Poland on the Baltic Sea near the mouth of the Vistula."),
    ("c16", "The Nobel Prize in Physics was shared by Marie Curie, Pierre Curie and Henri Becquerel."),
    ("c17", "Henri Becquerel discovered radioactivity in Paris while studying uranium crystals."),
    ("c18", "Uranium and radium are radioactive elements studied in Paris laboratories."),
]


@pytest.fixture(scope="session")
def corpus() -> list[dict[str, str]]:
    return [{"id": i, "text": t} for i, t in CORPUS]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, object]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if limit and len(rows) >= limit:
                break
    return rows


@pytest.fixture
def context_answerer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace ``g2cons_plugins.eval.answering.Answerer`` by one whose fake chat client answers a question of the
    bundled MuSiQue excerpt with a gold answer iff its context holds one (so EM equals Context Recall); every
    call reports 10 prompt tokens and 1 completion token."""
    from types import SimpleNamespace

    from g2cons_plugins.eval import answering
    from g2cons_plugins.eval.evaluation import answer_in_context, load_questions

    data = Path(__file__).resolve().parents[1] / "examples" / "data" / "musique_excerpt_questions.jsonl"
    gold = {q["question"]: q["answers"] for q in load_questions(data)}

    def create(*, model: str, messages: list[dict[str, str]], **kw: object) -> object:
        text = messages[-1]["content"]
        q = next(q for q in gold if q in text)
        ctx = text.split("Context:\n", 1)[1].split("\n\nQuestion:")[0]
        reply = next((a for a in gold[q] if answer_in_context([a], ctx)), "unknown")
        return SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(content=reply))],
            usage=SimpleNamespace(prompt_tokens=10, completion_tokens=1),
        )

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    real = answering.Answerer
    monkeypatch.setattr(answering, "Answerer", lambda model: real(model=model, client=client))


@pytest.fixture
def format_4(monkeypatch: pytest.MonkeyPatch) -> None:
    """Saves in this test write index format version 4 (texts as JSON columns), to test that reader."""
    from g2cons_plugins.storage import persistence

    monkeypatch.setattr(persistence, "WRITE_VERSION", 4)
