"""What a build will cost before it starts (``g2cons build ... --dry-run``): time, peak memory and disk.

A cost model fitted on measured builds: each build stage's seconds and the saved size as ``intercept + slope x
tokens`` (least squares over the sizes measured, relative errors), the peak resident memory as the lower of two such
lines (a small build keeps every array in memory, a large one spills most of them to files, so memory grows
steeply first, then by a smaller slope). The
constants below are plain data fitted by ``benchmarks/scale/fit_cost_model.py``: the stage seconds on
:data:`SOURCES` (``benchmarks/scale/build_stages.py``: generated passages of MuSiQue / HotpotQA / 2Wiki sentences,
wordllama, 2 shared cores, up to 40k passages), the peak memory (the build or the save after it, whichever is
higher) and the disk on :data:`PEAK_SOURCES` (``benchmarks/scale/build_peaks.py``: whole streaming builds and their
saves, 20k to 1M passages); the fit's error on each measured size is reported there. The tokens of an input are
estimated from its characters (the measured characters per cl100k token) and the chunk overlap, so a dry run
reads the input and nothing else: no tokenizer, no embedder, nothing written.

The figures hold for this kind of machine and English text embedded by wordllama; another embedder changes the
``embed`` stage most (a transformer such as MiniLM is ~10-50x slower per token on a CPU).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..config import EngineOptions

#: Where the constants come from (the measurements they were fitted on, paths in the repository).
SOURCES = ("benchmarks/scale/results/build_stages.json", "benchmarks/scale/results/build_stages_40k.json")
#: The largest build whose stages were timed (tokens).
FITTED_UP_TO_TOKENS = 6_007_858
#: Where the peak memory and disk lines come from (streaming builds and their saves).
PEAK_SOURCES = ("benchmarks/scale/results/build_peaks_bm25_spool.json",)
#: The largest build whose peak memory and disk were measured (tokens).
FITTED_PEAK_UP_TO_TOKENS = 150_501_640
#: Characters per cl100k token of the measured corpus.
CHARS_PER_TOKEN = 4.3488
#: Seconds per stage: (intercept s, s per million tokens).
STAGE_SECONDS: Mapping[str, tuple[float, float]] = {
    "read": (-0.0058, 0.1317),
    "split": (0.369, 2.7812),
    "sentences": (0.0028, 0.0228),
    "count": (0.0596, 0.3134),
    "embed": (0.4973, 2.7434),
    "terms": (0.503, 0.645),
    "derive": (-0.068, 1.0472),
    "unit_index": (0.017, 0.002),
    "save": (0.1246, 0.3183),
}
#: The largest build the model was checked on (3M passages; within 15% of its time, peak memory and disk).
CHECKED_AT_TOKENS = 451_626_539
#: Retrieval units per million tokens (the 3M-passage build: 4,635,756 units, 451,626,539 tokens).
UNITS_PER_MTOKEN = 10_264.7
#: The unit index's seconds per million tokens once it is an HNSW graph (``EngineOptions.ann_pq_max_units`` units
#: and more; below, a product-quantised scan built in about a second): the 3M-passage build's 1,145 s (py-spy
#: samples, ``benchmarks/scale/results/build_3m.json``). The timed stages above are all below 100k units.
UNIT_INDEX_S_PER_MTOKEN = 2.535
#: Peak resident memory of the build and its save: the lowest of these (intercept MB, MB per million tokens) lines.
PEAK_MB: tuple[tuple[float, float], ...] = ((530.4622, 39.0819), (870.445, 10.5368))
#: Saved index on disk: (intercept MB, MB per million tokens).
DISK_MB: tuple[float, float] = (89.8022, 47.2909)


@dataclass(frozen=True)
class Estimate:
    """A build's predicted cost."""

    tokens: int
    stage_seconds: dict[str, float]
    peak_mb: float
    disk_mb: float

    @property
    def seconds(self) -> float:
        """The whole build (the sum of its stages)."""
        return sum(self.stage_seconds.values())


def _line(coef: tuple[float, float], tokens: float) -> float:
    return max(0.0, coef[0] + coef[1] * tokens / 1e6)


def _unit_index_seconds(tokens: float) -> float:
    """The unit index: :data:`UNIT_INDEX_S_PER_MTOKEN` from the size where it becomes an HNSW graph, the timed line
    below it."""
    if tokens / 1e6 * UNITS_PER_MTOKEN >= EngineOptions().ann_pq_max_units:
        return UNIT_INDEX_S_PER_MTOKEN * tokens / 1e6
    return _line(STAGE_SECONDS["unit_index"], tokens)


def estimate(tokens: float) -> Estimate:
    """The model's prediction for a build of ``tokens`` cl100k tokens (see module doc)."""
    stages = {name: _line(c, tokens) for name, c in STAGE_SECONDS.items()}
    stages["unit_index"] = _unit_index_seconds(tokens)
    return Estimate(
        tokens=int(tokens),
        stage_seconds=stages,
        peak_mb=min(_line(line, tokens) for line in PEAK_MB),
        disk_mb=_line(DISK_MB, tokens),
    )


def tokens_of(texts: Iterable[str], chunk_tokens: int = 0, chunk_overlap: int = 0) -> float:
    """Estimated tokens a build of ``texts`` reads: their characters over :data:`CHARS_PER_TOKEN`, grown by the
    chunk overlap (each chunk of ``chunk_tokens`` repeats ``chunk_overlap`` tokens of the previous one)."""
    tokens = sum(len(t) for t in texts) / CHARS_PER_TOKEN
    if chunk_tokens > chunk_overlap > 0:
        tokens *= chunk_tokens / (chunk_tokens - chunk_overlap)
    return tokens


def _size(mb: float) -> str:
    return f"{mb / 1024:,.1f} GB" if mb >= 1024 else f"{mb:,.0f} MB"


def _time(s: float) -> str:
    return f"{s / 3600:,.1f} h" if s >= 3600 else f"{s / 60:,.1f} min" if s >= 90 else f"{s:,.0f} s"


def one_line(est: Estimate) -> str:
    """The estimate a build prints before it starts (with its progress bars)."""
    return (
        f"estimate (~{est.tokens:,} tokens): {_time(est.seconds)}, peak memory {_size(est.peak_mb)}, "
        f"disk {_size(est.disk_mb)} (g2cons build --dry-run: by stage)"
    )


def report(est: Estimate, n_documents: int, embedder: str) -> str:
    """The lines ``--dry-run`` prints: the three figures, then the stages."""
    stages = ", ".join(f"{k} {_time(v)}" for k, v in est.stage_seconds.items() if v >= 0.5 or k == "embed")
    lines = [
        f"dry run: {n_documents:,} documents, ~{est.tokens:,} tokens; nothing was built or written",
        f"estimated time: {_time(est.seconds)}",
        f"estimated peak memory: {_size(est.peak_mb)}",
        f"estimated disk: {_size(est.disk_mb)}",
        f"by stage: {stages}",
        f"(cost model: wordllama builds on 2 cores, stages timed up to {FITTED_UP_TO_TOKENS / 1e6:.0f}M tokens, "
        f"memory and disk fitted up to {FITTED_PEAK_UP_TO_TOKENS / 1e6:.0f}M and the unit index measured at "
        f"{CHECKED_AT_TOKENS / 1e6:.0f}M: docs/scale.md)",
    ]
    if embedder.strip().lower() not in ("auto", "wordllama", "hash"):
        lines.append(f"note: embedder {embedder!r} was not measured; the embed stage may take much longer")
    return "\n".join(lines)
