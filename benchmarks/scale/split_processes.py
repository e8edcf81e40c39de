"""Splitting on every core: split + count here against worker processes (1 and 2), and a whole build local against
``engine="processes"``, on generated passages, in one run.

    nice -n 5 python benchmarks/scale/split_processes.py --sizes 20000 100000 --build-n 100000 \\
        --out benchmarks/scale/results/split_processes.json

Stage rows (this process): ``split`` is :meth:`Engine.split` of every chunk at the default unit size,
``count`` the chunks' own token counts after it (the process engine serves them from what its workers counted
while splitting); a process engine's start-up (forkserver, workers, tokenizer and Punkt loaded) is timed apart,
on a first tiny split. CPU seconds of this process and of the workers during split + count are recorded: on a
quiet machine with enough cores, the wall time is about the workers' CPU over their number plus this process's.
The units of every engine are checked equal to the local ones. ``--embed-n``: also the
units of that many passages embedded here against 2 worker processes (one wordllama each): the variant the
engine does not use. Build rows: ``G2ConSIndex.build(..., embedder="wordllama")`` each in a fresh process (its
stage times, peak RSS of the build process; a
worker's peak is in the stage rows); the stored and derived state of both
builds is hashed and compared. The load average is recorded around every row: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import active_children, get_context
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ENC = "cl100k_base"

BUILD_CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, sys.argv[3])
import corpus
n, engine = int(sys.argv[1]), sys.argv[2]
docs = list(corpus.passages(n))
from g2cons_plugins import G2ConSIndex
kw = {} if engine == "local" else {"engine": "processes", "num_workers": int(engine.split(":")[1])}
t = time.perf_counter()
idx = G2ConSIndex.build(docs, embedder="wordllama", **kw)
build = time.perf_counter() - t
import pathlib, tempfile
with tempfile.TemporaryDirectory() as d:
    t = time.perf_counter()
    idx.save(d)
    save = time.perf_counter() - t
    files = {str(p.relative_to(d)).split("/", 1)[-1]: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(pathlib.Path(d).rglob("*"))
             if p.is_file() and p.name not in ("CURRENT", ".lock")}  # CURRENT names a dated version
print("RESULT " + json.dumps({
    "engine": engine, "n": n, "build_s": round(build, 2),
    "stages_s": {k: round(float(v), 2) for k, v in idx.timings.items()},
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "save_s": round(save, 2), "units": len(idx.stored.units), "files_sha256": files}))
"""


def _peak_mb(pid: int) -> int:
    """Peak resident memory (VmHWM) of process ``pid``, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return 0


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds used so far by the processes ``pids`` (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _stage_rows(n: int, configs: list[int]) -> list[dict[str, object]]:
    """Split + count of ``n`` passages: 0 = local, k = a ProcessEngine with k workers."""
    import corpus

    from g2cons_plugins import G2ConSConfig
    from g2cons_plugins.chunks import make_chunks
    from g2cons_plugins.engine.build_engines import LocalEngine
    from g2cons_plugins.engine.process_engine import DEFAULT_PART, ProcessEngine

    chunks = make_chunks(list(corpus.passages(n)))
    size = G2ConSConfig().graph.unit_tokens
    texts = [c.text for c in chunks]
    reference = None
    rows: list[dict[str, object]] = []
    for workers in configs:
        load0, start = _load(), 0.0
        engine = LocalEngine() if workers == 0 else ProcessEngine(num_workers=workers, batch_size=1)
        if workers:  # one part per worker: the pool starts a worker per part while none is idle
            t = time.perf_counter()
            engine.split(chunks[:workers], ENC, size)
            start = time.perf_counter() - t
            engine.batch_size = DEFAULT_PART
        pids = [p.pid for p in active_children() if p.pid]
        cpu0, main0 = _cpu_s(pids), time.process_time()
        t = time.perf_counter()
        units = engine.split(chunks, ENC, size)
        split = time.perf_counter() - t
        t = time.perf_counter()
        counts = engine.count(texts, ENC)
        count = time.perf_counter() - t
        main_cpu, workers_cpu = time.process_time() - main0, _cpu_s(pids) - cpu0
        worker_peak = max((_peak_mb(pid) for pid in pids), default=0)
        if workers:
            engine.close()
        if reference is None:
            reference = (units, counts)
        row = {
            "n": n,
            "engine": "local" if workers == 0 else f"processes:{workers}",
            "split_s": round(split, 2),
            "count_s": round(count, 3),
            "start_s": round(start, 2),
            "worker_peak_rss_mb": worker_peak,
            "cpu_s_this_process": round(main_cpu, 2),
            "cpu_s_workers": round(workers_cpu, 2),
            "units": sum(map(len, units)),
            "equal_to_first": (units, counts) == reference,
            "loadavg_before_after": [load0, _load()],
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
        del units, counts
    return rows


def _embed_part(texts: list[str]) -> bytes:
    from g2cons_plugins.build import embed_texts
    from g2cons_plugins.embedders import get_embedder

    return embed_texts(get_embedder("wordllama"), texts, "units", False).tobytes()


def _embed_rows(n: int) -> list[dict[str, object]]:
    """Unit texts of ``n`` passages embedded here, and by 2 worker processes (parts of 2,048 texts)."""
    import corpus
    import numpy as np

    from g2cons_plugins import G2ConSConfig
    from g2cons_plugins.build import embed_texts
    from g2cons_plugins.chunks import make_chunks
    from g2cons_plugins.embedders import get_embedder
    from g2cons_plugins.engine.build_engines import LocalEngine

    size = G2ConSConfig().graph.unit_tokens
    units = [u.text for us in LocalEngine().split(make_chunks(list(corpus.passages(n))), ENC, size) for u in us]
    emb = get_embedder("wordllama")
    emb.embed(["warm up"])
    load0 = _load()
    t = time.perf_counter()
    here = embed_texts(emb, units, "units", False)
    here_s = time.perf_counter() - t
    load1 = _load()
    with ProcessPoolExecutor(2, mp_context=get_context("forkserver")) as pool:
        list(pool.map(_embed_part, [["warm up"]] * 2))
        t = time.perf_counter()
        parts = list(pool.map(_embed_part, [units[a : a + 2048] for a in range(0, len(units), 2048)]))
        procs_s = time.perf_counter() - t
    got = np.frombuffer(b"".join(parts), dtype=np.float32).reshape(here.shape)
    row = {
        "n": n,
        "units": len(units),
        "embed_here_s": round(here_s, 2),
        "embed_2_processes_s": round(procs_s, 2),
        "equal": bool(np.array_equal(got, here)),
        "loadavg": [load0, load1, _load()],
    }
    print(json.dumps(row), flush=True)
    return [row]


def _build_rows(n: int, engines: list[str]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for engine in engines:
        load0 = _load()
        proc = subprocess.run(
            ["nice", "-n", "0", sys.executable, "-c", BUILD_CHILD, str(n), engine, str(HERE)],
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            raise RuntimeError(f"build {engine} failed:\n{proc.stderr[-3000:]}")
        row = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[7:])
        row["loadavg_before_after"] = [load0, _load()]
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[20_000, 100_000])
    ap.add_argument("--workers", type=int, nargs="*", default=[0, 1, 2], help="0 = local")
    ap.add_argument("--embed-n", type=int, default=0)
    ap.add_argument("--build-n", type=int, default=0)
    ap.add_argument("--build-engines", nargs="*", default=["local", "processes:2"])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    out: dict[str, object] = {
        "cpus": len(os.sched_getaffinity(0)),
        "nice": os.nice(0),
        "command": " ".join(sys.argv),
        "stages": [row for n in args.sizes for row in _stage_rows(n, args.workers)],
        "embed": _embed_rows(args.embed_n) if args.embed_n else [],
        "builds": _build_rows(args.build_n, args.build_engines) if args.build_n else [],
        "peak_rss_mb_this_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    builds = out["builds"]
    if isinstance(builds, list) and builds:
        out["builds_equal"] = len({json.dumps(b["files_sha256"], sort_keys=True) for b in builds}) == 1
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print("written", args.out)


if __name__ == "__main__":
    main()
