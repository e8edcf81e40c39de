"""Scale benchmark: build (by stage), save, load, trickle adds (1, 10, 100 chunks), add 1%, remove 1%, query
latency, memory and embedded texts per unit, per corpus size.

    nice -n 10 python benchmarks/scale/bench.py --sizes 10000,100000,1000000 --embedder wordllama \\
        --out benchmarks/scale/results/scale_wordllama

Corpora come from ``corpus.py`` (seeded recombinations of real sentences), given to the build as a generator (as a
file reader gives them; ``BENCH_INPUT_LIST=1``: as a list, as the runs before the streaming build did). Each size
runs in three fresh processes, so every peak-RSS figure belongs to that size and that job alone: ``build`` (build,
save; counts every text the embedder receives: "embedded texts per unit"), ``load`` (load the saved index, then
queries: latency includes embedding the question; real MuSiQue questions, default ``retrieve`` settings) and
``update`` (load the saved index
as a serving process would, add 1, 10 and 100 new chunks one call each: the trickle row; then the next 1%, then
remove 1% of the original ids, then ``refresh()``, which a save made first until the trickle log;
``save_after_updates.py`` compares the two). Peak RSS per phase is sampled every 20 ms by a thread
(``/proc/self/statm``); ``ru_maxrss`` is the process-wide peak; "resident after load" is the RSS right after
``load`` returns, "after adds" the RSS once the adds (before the removal) are done. Before the load and the update
jobs the saved index is written back to disk (``os.sync()``): the kernel's writeback of a just-saved index (700 MB
at 80k) otherwise shares the 2 cores with the timed queries. Writes ``OUT.json``, ``OUT.md`` (a table, each size's
update and query ratios, and the scale targets at 80k and 1M where those sizes were run) and ``OUT.png`` (a plot);
``--render OUT.json`` re-writes the last two from saved results."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

N_QUERIES = 200
PAGE = os.sysconf("SC_PAGE_SIZE")


class PeakRSS:
    """Samples the resident set size in a daemon thread; ``phase()`` returns and resets the peak since last call."""

    def __init__(self, interval: float = 0.02) -> None:
        self._peak = 0
        self._interval = interval
        self._lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True).start()

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE

    def _run(self) -> None:
        while True:
            rss = self.now()
            with self._lock:
                self._peak = max(self._peak, rss)
            time.sleep(self._interval)

    def phase(self) -> float:
        """Peak RSS in MB since the previous call (then reset to the current RSS)."""
        rss = self.now()
        with self._lock:
            peak, self._peak = max(self._peak, rss), rss
        return round(peak / 2**20, 1)


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _ru_maxrss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class CountingEmbedder:
    """The named embedder, counting the texts it is asked to embed (same name and dimension)."""

    def __init__(self, name: str) -> None:
        from g2cons_plugins.embedders import get_embedder

        self.inner = get_embedder(name)
        self.name, self.dim, self.texts = self.inner.name, self.inner.dim, 0

    def embed(self, texts: Any) -> Any:
        self.texts += len(texts)
        return self.inner.embed(texts)


def _timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return round(time.perf_counter() - t0, 3)


def job_build(n: int, embedder: str, seed: int, path: Path) -> dict[str, Any]:
    """Build on ``n`` passages and save to ``path``; counts what the embedder received."""
    from g2cons_plugins import G2ConSIndex

    mem = PeakRSS()
    # the passages as a generator, as a file reader gives them: the build holds no list of the corpus
    rows = list(corpus.passages(n, seed)) if os.environ.get("BENCH_INPUT_LIST") else corpus.passages(n, seed)
    out: dict[str, Any] = {"n_passages": n, "embedder": embedder, "seed": seed, "rss_inputs_mb": mem.phase()}
    counting = CountingEmbedder(embedder)
    t0 = time.perf_counter()
    idx = G2ConSIndex.build(rows, embedder=counting)
    out["build_s"] = round(time.perf_counter() - t0, 2)
    out["build_stages_s"] = {k: round(v, 2) for k, v in idx.timings.items()}
    out["peak_rss_build_mb"] = mem.phase()
    out["n_units"] = len(idx.units)
    out["embedded_texts"] = counting.texts
    out["embedded_per_unit"] = round(counting.texts / max(1, len(idx.units)), 3)
    out["n_tokens"] = int(idx.stored.chunk_tokens.sum())
    out["n_sentences"] = len(idx.stored.sentences)
    out["graph"] = idx.stats.to_dict()
    del rows
    out["input"] = "list" if os.environ.get("BENCH_INPUT_LIST") else "generator"
    t0 = time.perf_counter()
    idx.save(path)
    out["save_s"] = round(time.perf_counter() - t0, 2)
    out["save_bytes"] = _dir_bytes(path)
    out["peak_rss_save_mb"] = mem.phase()
    out["ru_maxrss_build_process_mb"] = _ru_maxrss_mb()
    return out


# single-chunk adds timed one by one after the adds of 1, 10 and 100 (a feed of new documents): more than
# update.DEFER_CHUNKS, so the stream holds the adds that make the waiting concept-graph update
STREAM = 80


def job_update(n: int, seed: int, path: Path, trickle_only: bool = False) -> dict[str, Any]:
    """Load the saved index (as a serving process would), add 1, 10 and 100 new chunks (one call each), then
    :data:`STREAM` chunks one at a time, the next 1%, remove 1% of the original ids, then ``refresh()`` (what a
    save did first before the trickle log); peak RSS per phase. ``trickle_only``: stop after the chunks added one
    at a time (the small adds of a feed, without the minutes of the 1% add, removal and refresh at 1M)."""
    import random

    from g2cons_plugins import G2ConSIndex

    mem = PeakRSS()
    delta = max(1, n // 100)
    rows = list(corpus.passages(111 + STREAM + delta, seed, start=n))
    trickle, stream, extra = rows[:111], rows[111 : 111 + STREAM], rows[111 + STREAM :]
    drop = random.Random(seed).sample([f"g{i:08d}" for i in range(n)], delta)  # corpus.passages' ids
    idx = G2ConSIndex.load(path)
    out: dict[str, Any] = {"update_rss_after_load_mb": round(mem.now() / 2**20, 1)}
    out["peak_rss_update_load_mb"] = mem.phase()
    out["trickle_add_s"] = {
        "1": _timed(idx.add, trickle[:1]),
        "10": _timed(idx.add, trickle[1:11]),
        "100": _timed(idx.add, trickle[11:111]),
    }
    out["trickle_stream_s"] = [_timed(idx.add, [c]) for c in stream]  # one chunk at a time, as a feed adds them
    out["peak_rss_trickle_mb"] = mem.phase()
    if trickle_only:
        out["ru_maxrss_update_process_mb"] = _ru_maxrss_mb()
        return out
    out["add_1pct_s"] = _timed(idx.add, extra)
    out["peak_rss_add_mb"] = mem.phase()
    out["rss_after_adds_mb"] = round(mem.now() / 2**20, 1)  # what a serving process holds after the adds
    out["remove_1pct_s"] = _timed(idx.remove, drop)
    out["peak_rss_remove_mb"] = mem.phase()
    out["refreshed_before_refresh"] = bool(idx.snapshot.refreshed)
    out["refresh_s"] = _timed(idx.refresh)
    out["peak_rss_refresh_mb"] = mem.phase()
    out["ru_maxrss_update_process_mb"] = _ru_maxrss_mb()
    return out


def _rss_parts() -> dict[str, float]:
    """Anonymous and file-backed parts of this process's resident set (``RssAnon`` / ``RssFile``), MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("RssAnon", "RssFile"):
                out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def job_load(path: Path, n_queries: int) -> dict[str, Any]:
    """Load the saved index and time ``n_queries`` real questions (query embedding included)."""
    import numpy as np

    from g2cons_plugins import G2ConSIndex

    mem = PeakRSS()
    t0 = time.perf_counter()
    idx = G2ConSIndex.load(path)
    out: dict[str, Any] = {"load_s": round(time.perf_counter() - t0, 2)}
    out["rss_after_load_mb"] = round(mem.now() / 2**20, 1)
    out["rss_after_load_parts_mb"] = _rss_parts()
    out["peak_rss_load_mb"] = mem.phase()
    ann = idx.snapshot.unit_ann
    out["unit_index"] = "exact scan" if ann is None else type(ann).__name__  # UnitPQ: the scan; UnitANN: the graph
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: n_queries + 10]
    for q in questions[:10]:  # warm-up: lazy imports, first-call allocations
        idx.retrieve(q)
    lat = []
    for q in questions[10:]:
        t = time.perf_counter()
        idx.retrieve(q)
        lat.append((time.perf_counter() - t) * 1000)
    out["n_queries"] = len(lat)
    out["query_p50_ms"] = round(float(np.percentile(lat, 50)), 2)
    out["query_p95_ms"] = round(float(np.percentile(lat, 95)), 2)
    out["peak_rss_query_mb"] = mem.phase()
    out["rss_after_queries_mb"] = round(mem.now() / 2**20, 1)
    out["rss_after_queries_parts_mb"] = _rss_parts()  # file pages: the index files' maps (the kernel can drop)
    out["ru_maxrss_load_process_mb"] = _ru_maxrss_mb()
    return out


def _subprocess(args: list[str]) -> dict[str, Any]:
    res = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"job {args} failed:\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_size(n: int, embedder: str, seed: int, n_queries: int, workdir: Path) -> dict[str, Any]:
    path = workdir / f"index_{n}"
    row = _subprocess(
        ["--job", "build", "--n", str(n), "--embedder", embedder, "--seed", str(seed), "--path", str(path)]
    )
    os.sync()  # the save's dirty pages are written back now, not by the kernel during the timed queries
    row.update(_subprocess(["--job", "load", "--path", str(path), "--queries", str(n_queries)]))
    os.sync()
    row.update(_subprocess(["--job", "update", "--n", str(n), "--seed", str(seed), "--path", str(path)]))
    row["loadavg_1min_after"] = round(os.getloadavg()[0], 2)  # other work on the machine skews every timing
    shutil.rmtree(path, ignore_errors=True)
    return row


def _fmt(x: float, digits: int = 1) -> str:
    return f"{x:,.{digits}f}"


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Scale benchmark ({meta['embedder']}, {meta['cpus']} CPUs, commit {meta['commit']}, {meta['date']}; "
        f"1-min load average after each size: {', '.join(str(r.get('loadavg_1min_after', '?')) for r in rows)}).",
        "",
        "| passages | tokens | build s (split+count / embed / derive) | save MB | load s | add 1% s | remove 1% s "
        "| query p50 / p95 ms | peak RSS MB (build / load+query / load+updates) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        st = r["build_stages_s"]
        stages = " / ".join(_fmt(st.get(k, float("nan"))) for k in ("split_and_count", "embed", "derive"))
        lines.append(
            f"| {r['n_passages']:,} | {r['n_tokens']:,} | {_fmt(r['build_s'])} ({stages}) | "
            f"{_fmt(r['save_bytes'] / 2**20)} | {_fmt(r['load_s'])} | {_fmt(r['add_1pct_s'])} | "
            f"{_fmt(r['remove_1pct_s'])} | {_fmt(r['query_p50_ms'])} / {_fmt(r['query_p95_ms'])} | "
            f"{r['peak_rss_build_mb']:,.0f} / {max(r['peak_rss_load_mb'], r['peak_rss_query_mb']):,.0f} / "
            f"{_update_peak_mb(r):,.0f} |"
        )
    lines += [
        "",
        "| passages | add 1 / 10 / 100 chunks s | then one chunk at a time: median / mean / max s "
        "| refresh s (peak RSS MB) | embedded texts per unit | resident after load / after queries / after adds MB |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        tr = r.get("trickle_add_s") or {}
        trickle = " / ".join(_get(tr, k, 2) for k in ("1", "10", "100"))
        feed = r.get("trickle_stream_s") or []
        fed = "-"
        if feed:
            fed = f"{statistics.median(feed):.2f} / {statistics.fmean(feed):.2f} / {max(feed):.2f} ({len(feed)})"
        lines.append(
            f"| {r['n_passages']:,} | {trickle} | {fed} | {_get(r, 'refresh_s', 2)} "
            f"({_get(r, 'peak_rss_refresh_mb', 0)}) | "
            f"{_get(r, 'embedded_per_unit', 2)} | {_get(r, 'rss_after_load_mb', 0)} / "
            f"{_get(r, 'rss_after_queries_mb', 0)} / {_get(r, 'rss_after_adds_mb', 0)} |"
        )
    return "\n".join(lines) + "\n" + targets(rows)


def _get(r: dict[str, Any], key: str, digits: int) -> str:
    """``r[key]`` formatted, or "-" where that run did not measure it (results of an older version)."""
    return _fmt(r[key], digits) if isinstance(r.get(key), (int, float)) else "-"


# the scale targets: (passages, label, value of a row (and the 10k row), limit); checked where that size was run
TARGETS: tuple[tuple[int, str, Any, float], ...] = (
    (80_000, "query p50 / the 10k query p50", lambda r, b: r["query_p50_ms"] / b["query_p50_ms"], 2.0),
    (80_000, "add 1% s / build s", lambda r, b: r["add_1pct_s"] / r["build_s"], 0.05),
    (80_000, "peak RSS of load + adds + remove, GB", lambda r, b: _update_peak_mb(r) / 1024, 1.2),
    (80_000, "peak RSS of load + adds (no removal), GB", lambda r, b: _adds_peak_mb(r) / 1024, 1.2),
    (1_000_000, "build min", lambda r, b: r["build_s"] / 60, 25),
    (1_000_000, "query p50 ms", lambda r, b: r["query_p50_ms"], 10),
    (1_000_000, "peak RSS of load + adds + remove, GB", lambda r, b: _update_peak_mb(r) / 1024, 8),
    (1_000_000, "peak RSS of load + adds (no removal), GB", lambda r, b: _adds_peak_mb(r) / 1024, 8),
    (1_000_000, "resident after load, GB", lambda r, b: r["rss_after_load_mb"] / 1024, 4),
    (1_000_000, "add 1% s / build s", lambda r, b: r["add_1pct_s"] / r["build_s"], 0.05),
    (1_000_000, "remove 1% s / build s", lambda r, b: r["remove_1pct_s"] / r["build_s"], 0.05),
    (1_000_000, "add one chunk s (the first add after load)", lambda r, b: r["trickle_add_s"]["1"], 1),
    (1_000_000, "add one chunk s (later adds one at a time, mean)", lambda r, b: _mean(r["trickle_stream_s"]), 1),
    (0, "embedded texts per unit", lambda r, b: r["embedded_per_unit"], 1.5),
)


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs)


def _adds_peak_mb(r: dict[str, Any]) -> float:
    """Peak RSS of the update process through the load and the adds (1, 10, 100, one at a time, 1%): the issue's
    "peak RSS including an add" read without the removal that follows them."""
    return float(max(r[k] for k in ("peak_rss_update_load_mb", "peak_rss_trickle_mb", "peak_rss_add_mb")))


def _update_peak_mb(r: dict[str, Any]) -> float:
    """Peak RSS of the update process: load, the trickle adds, add 1%, remove 1% (results of older versions, which
    updated in the build process: of build, add and remove)."""
    if "peak_rss_update_load_mb" not in r:
        return float(max(r["peak_rss_build_mb"], r["peak_rss_add_mb"], r.get("peak_rss_remove_mb", 0)))
    keys = ("peak_rss_update_load_mb", "peak_rss_trickle_mb", "peak_rss_add_mb", "peak_rss_remove_mb")
    return float(max(r[k] for k in keys))


def targets(rows: list[dict[str, Any]]) -> str:
    """Every size's update and query ratios, then the scale targets at the sizes that were run (met / missed;
    passages 0: every size)."""
    base = next((r for r in rows if r["n_passages"] == 10_000), None)
    lines = [
        "",
        "| passages | load / build | add 1% / build | remove 1% / build | query p50 / 10k query p50 |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        q = f"{r['query_p50_ms'] / base['query_p50_ms']:.2f}x" if base else "-"
        lines.append(
            f"| {r['n_passages']:,} | {r['load_s'] / r['build_s']:.1%} | {r['add_1pct_s'] / r['build_s']:.1%} | "
            f"{r['remove_1pct_s'] / r['build_s']:.1%} | {q} |"
        )
    checks = []
    for n, label, value, limit in TARGETS:
        for row in (r for r in rows if n in (0, r["n_passages"])):
            if base is None and "10k" in label:
                continue
            try:
                v = value(row, base)
            except (KeyError, TypeError):  # not measured by the version that made these results
                continue
            shown = f"{v:.1%}" if limit < 1 else f"{v:,.2f}"
            want = f"{limit:.0%}" if limit < 1 else f"{limit:g}"
            size = f"{row['n_passages']:,}"
            checks.append(f"| {size} | {label} | {shown} | <= {want} | {'met' if v <= limit else 'missed'} |")
    if checks:
        lines += ["", "| passages | target | measured | limit | |", "|---|---|---|---|---|", *checks]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["n_passages"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    series = (("build_s", "build"), ("load_s", "load"), ("add_1pct_s", "add 1%"), ("remove_1pct_s", "remove 1%"))
    for key, label in series:
        a.plot(n, [r[key] for r in rows], marker="o", label=label)
    a.plot(n, [r["query_p50_ms"] / 1000 for r in rows], marker="s", label="query p50")
    one = [(r["n_passages"], r["trickle_add_s"]["1"]) for r in rows if "trickle_add_s" in r]
    if one:
        a.plot(*zip(*one, strict=True), marker="^", label="add 1 chunk")
    a.set(xscale="log", yscale="log", xlabel="passages", ylabel="seconds", title=title)
    a.legend()
    b.plot(n, [r["peak_rss_build_mb"] for r in rows], marker="o", label="build")
    b.plot(n, [_update_peak_mb(r) for r in rows], marker="o", label="load + adds + remove")
    b.plot(n, [max(r["peak_rss_load_mb"], r["peak_rss_query_mb"]) for r in rows], marker="o", label="load + query")
    after = [(r["n_passages"], r["rss_after_load_mb"]) for r in rows if "rss_after_load_mb" in r]
    if after:
        b.plot(*zip(*after, strict=True), marker="s", linestyle="--", label="resident after load")
    b.set(xscale="log", yscale="log", xlabel="passages", ylabel="peak RSS (MB)", title="memory")
    b.legend()
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated passage counts")
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=N_QUERIES)
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).parent / "results" / "scale_wordllama",
        help="output prefix: writes OUT.json, OUT.md, OUT.png",
    )
    ap.add_argument("--workdir", type=Path, help="where indexes are saved (default: a temporary directory)")
    ap.add_argument("--render", type=Path, help="only re-write OUT.md and OUT.png from this saved OUT.json")
    ap.add_argument("--job", choices=("build", "load", "update"), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--trickle-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.job == "build":
        print(json.dumps(job_build(args.n, args.embedder, args.seed, args.path)))
        return
    if args.job == "load":
        print(json.dumps(job_load(args.path, args.queries)))
        return
    if args.job == "update":
        print(json.dumps(job_update(args.n, args.seed, args.path, args.trickle_only)))
        return
    if args.render:
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        out = args.render.with_suffix("")
        _write(out.with_suffix(".md"), markdown(saved["rows"], saved["meta"]))
        plot(saved["rows"], out.with_suffix(".png"), f"G2ConS scale ({saved['meta']['embedder']})")
        print(markdown(saved["rows"], saved["meta"]))
        return
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    meta = {
        "embedder": args.embedder,
        "cpus": os.cpu_count(),
        "commit": commit or "?",
        "date": time.strftime("%Y-%m-%d"),
        "python": sys.version.split()[0],
    }
    rows: list[dict[str, Any]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        for n in sizes:
            t0 = time.perf_counter()
            rows.append(run_size(n, args.embedder, args.seed, args.queries, Path(work)))
            print(f"{n:,} passages done in {time.perf_counter() - t0:.0f} s: {json.dumps(rows[-1])}", file=sys.stderr)
            _write(args.out.with_suffix(".json"), json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
            _write(args.out.with_suffix(".md"), markdown(rows, meta))
            plot(rows, args.out.with_suffix(".png"), f"G2ConS scale ({args.embedder})")
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
