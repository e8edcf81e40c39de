"""Memory of a derive, step by step, and of ``refresh()``, for three variants alternated in fresh processes in one
run: ``before`` (an older code tree, ``--before DIR``: e.g. ``git archive c72fc04 g2cons_plugins | tar -x -C DIR``),
``plain`` (this tree with the spill floor out of reach: every derive result in anonymous memory, only the stored
state's file pages unmapped at each step) and ``spill`` (this tree:
:class:`g2cons_plugins.storage.step_spill.SpillSteps` as the derive's ``keep`` hook, arrays of 16 MB and more in
unlinked read-only file maps, the pages read unmapped at each step). ``plain`` against ``before`` is what the
refresh's stored state (:mod:`g2cons_plugins.engine.refresh_store`) and the unmapped input pages changed;
``spill`` against ``plain`` the spill of the results.

An index of ``--n`` generated passages (:mod:`corpus`, wordllama) is built and saved once into ``--workdir`` (kept
for later runs). Then, per round and variant, in a fresh process:

- ``derive``: the index loaded (its stored state memory-mapped, as a refresh finds it), then ``build.derive`` over it
  (given the loaded term index), with the engine's memory hook (``after_build_step``) and the variant's ``keep``.
  Per step: seconds, resident set after it (``VmRSS``, and its anonymous / file parts) and the peak while it ran
  (``VmHWM``, reset before each step through ``/proc/self/clear_refs``);
- ``refresh``: the index loaded, ``--adds`` new passages added by trickle (``exact=False``) and one removed, then
  ``refresh()``; the peak resident set of the refresh alone, and what the process holds after it. The ``plain``
  variant sets the spill floor out of reach (``SPILL_STEP_MIN_BYTES``), so nothing goes to a file.

    nice -n 5 python benchmarks/scale/derive_memory.py --n 100000 --rounds 2 --workdir /tmp/derive_memory \\
        --before /tmp/before_tree --after /tmp/after_tree --out benchmarks/scale/results/derive_memory_100k.json

(``/tmp/before_tree``: ``git archive c72fc04 g2cons_plugins``, the code before the step spill and the refresh's
stored state; ``/tmp/after_tree``: the same of the commit measured.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TREE_ENV = "DERIVE_MEMORY_TREE"  # the code tree a job imports g2cons_plugins from
sys.path.insert(0, str(HERE))
sys.path.insert(0, os.environ.get(TREE_ENV) or str(HERE.parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import corpus  # noqa: E402

VARIANTS = ("before", "plain", "spill")


def _status() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon, RssFile of this process, in MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _variant(name: str) -> None:
    if name == "plain":
        from g2cons_plugins.storage import step_spill

        step_spill.SPILL_STEP_MIN_BYTES = 2**62  # nothing reaches the floor: every result stays in memory


def job_build(n: int, path: Path) -> dict[str, Any]:
    from g2cons_plugins import G2ConSIndex

    t0 = time.perf_counter()
    idx = G2ConSIndex.build(list(corpus.passages(n, 0)), embedder="wordllama")
    build_s = time.perf_counter() - t0
    idx.save(path)
    return {"build_s": round(build_s, 1), "peak_build_mb": _status()["VmHWM"], "units": len(idx.units)}


def job_derive(variant: str, path: Path) -> dict[str, Any]:
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.build import derive
    from g2cons_plugins.storage.memory import after_build_step, drop_mapped_pages, release_free_memory, state_arrays

    _variant(variant)
    idx = G2ConSIndex.load(path)
    st, config, terms = idx.snapshot.stored, idx.config, idx.snapshot.derived.terms
    drop_mapped_pages(state_arrays(st, idx.snapshot.derived))
    release_free_memory()
    steps: list[dict[str, Any]] = []
    start = {"step": "start", "s": 0.0, **_status()}
    steps.append(start)
    _reset_peak()
    t = time.perf_counter()

    keep: dict[str, Any] = {}
    memory_hook = after_build_step
    if variant != "before":
        from g2cons_plugins.storage.step_spill import SpillSteps

        spill = SpillSteps(st)  # the stored state's file pages are unmapped at each step too
        keep = {"keep": spill}
        if hasattr(spill, "after_step"):  # the engine's own pair of hooks (storage.step_spill.derive_hooks)
            memory_hook = spill.after_step

    def hook(step: str) -> None:
        nonlocal t
        memory_hook(step)
        if step == "vectors.block":
            return
        steps.append({"step": step, "s": round(time.perf_counter() - t, 2), **_status()})
        _reset_peak()
        t = time.perf_counter()

    t_all = time.perf_counter()
    dv = derive(st, config, terms, after_step=hook, **keep)
    steps.append({"step": "assemble", "s": round(time.perf_counter() - t, 2), **_status()})
    total = time.perf_counter() - t_all
    release_free_memory()
    end = _status()
    return {
        "derive_s": round(total, 2),
        "steps": steps,
        "peak_mb": max(s["VmHWM"] for s in steps),
        "held_after_mb": round(end["VmRSS"] - start["VmRSS"], 1),
        "anon_held_after_mb": round(end["RssAnon"] - start["RssAnon"], 1),
        "n_edges": int(len(dv.edges.rows)),
    }


def job_refresh(variant: str, path: Path, n: int, adds: int) -> dict[str, Any]:
    from g2cons_plugins import G2ConSIndex

    _variant(variant)
    idx = G2ConSIndex.load(path)
    new = list(corpus.passages(adds, 0, start=n))
    idx.add(new, exact=False)
    idx.remove(["g00000003"], exact=False)
    assert not idx.refreshed
    before = _status()
    _reset_peak()
    t0 = time.perf_counter()
    idx.refresh()
    s = time.perf_counter() - t0
    after = _status()
    return {
        "refresh_s": round(s, 2),
        "rss_before_mb": before["VmRSS"],
        "peak_refresh_mb": after["VmHWM"],
        "rss_after_mb": after["VmRSS"],
        "anon_after_mb": after["RssAnon"],
    }


def _subprocess(args: list[str], tree: Path | None = None) -> dict[str, Any]:
    env = {**os.environ, TREE_ENV: str(tree)} if tree else dict(os.environ)
    res = subprocess.run(
        [sys.executable, __file__, "--job", *args], capture_output=True, text=True, check=False, env=env
    )
    if res.returncode != 0:
        raise RuntimeError(f"job {args} failed:\n{res.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return result


def _commit() -> str:
    res = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE, check=False)
    return res.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--adds", type=int, default=100, help="passages added by trickle before the refresh")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/derive_memory"))
    ap.add_argument("--before", type=Path, help="an older tree holding g2cons_plugins (the before variant)")
    ap.add_argument("--after", type=Path, help="the tree of the plain and spill variants (default: this one)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--job", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.job:
        kind, *rest = a.job
        if kind == "build":
            out = job_build(int(rest[0]), Path(rest[1]))
        elif kind == "derive":
            out = job_derive(rest[0], Path(rest[1]))
        else:
            out = job_refresh(rest[0], Path(rest[1]), int(rest[2]), int(rest[3]))
        print(json.dumps(out))
        return
    path = a.workdir / f"index_{a.n}"
    result: dict[str, Any] = {
        "n": a.n,
        "adds": a.adds,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if not (path / "CURRENT").is_file():
        a.workdir.mkdir(parents=True, exist_ok=True)
        result["build"] = _subprocess(["build", str(a.n), str(path)])
        print("build", result["build"], flush=True)
    runs: list[dict[str, Any]] = []
    for r in range(a.rounds):
        for variant in VARIANTS:
            if variant == "before" and not a.before:
                continue
            tree = a.before if variant == "before" else a.after
            row = {"round": r, "variant": variant, "load_1min_before": os.getloadavg()[0]}
            row["derive"] = _subprocess(["derive", variant, str(path)], tree)
            row["refresh"] = _subprocess(["refresh", variant, str(path), str(a.n), str(a.adds)], tree)
            runs.append(row)
            d, f = row["derive"], row["refresh"]
            print(
                variant,
                "derive peak",
                d["peak_mb"],
                "held",
                d["held_after_mb"],
                "refresh peak",
                f["peak_refresh_mb"],
                "s",
                f["refresh_s"],
                flush=True,
            )
    result["trees"] = {"before": str(a.before) if a.before else None, "after": str(a.after or HERE.parents[1])}
    result["runs"] = runs
    result["load_1min_after"] = os.getloadavg()[0]
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
