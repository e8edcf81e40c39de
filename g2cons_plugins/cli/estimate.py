"""What a build will cost before it starts (``g2cons build ... --dry-run``): time, peak memory and disk.

A cost model fitted on measured builds: each build stage's seconds, and the build's peak resident memory and
saved size, as ``intercept + slope x tokens`` (least squares over the sizes measured, relative errors). The
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

#: Where the constants come from (the measurements they were fitted on, paths in the repository).
SOURCES = ("benchmarks/scale/results/build_stages.json", "benchmarks/scale/results/build_stages_40k.json")
#: The largest build whose stages were timed (tokens).
FITTED_UP_TO_TOKENS = 6_007_858
#: Where the peak memory and disk lines come from (streaming builds and their saves).
PEAK_SOURCES = ("benchmarks/scale/results/build_peaks_streaming.json",)
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
#: Peak resident memory of the build and its save: (intercept MB, MB per million tokens).
PEAK_MB: tuple[float, float] = (669.986, 22.6373)
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


def estimate(tokens: float) -> Estimate:
    """The model's prediction for a build of ``tokens`` cl100k tokens (see module doc)."""
    return Estimate(
        tokens=int(tokens),
        stage_seconds={name: _line(c, tokens) for name, c in STAGE_SECONDS.items()},
        peak_mb=_line(PEAK_MB, tokens),
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
        f"(cost model: wordllama builds on 2 cores, timed up to {FITTED_UP_TO_TOKENS / 1e6:.0f}M tokens, memory "
        f"and disk measured up to {FITTED_PEAK_UP_TO_TOKENS / 1e6:.0f}M: docs/scale.md)",
    ]
    if embedder.strip().lower() not in ("auto", "wordllama", "hash"):
        lines.append(f"note: embedder {embedder!r} was not measured; the embed stage may take much longer")
    return "\n".join(lines)
