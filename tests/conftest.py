"""Shared fixtures. HF_HUB_OFFLINE makes a stray hub call fail fast."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import json
from pathlib import Path

import pytest

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
