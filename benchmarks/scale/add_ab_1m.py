"""Summary of add_ab_1m.sh's rounds (a folder of old_R.json / new_R.json): per tree and round the first add after
the load, the adds of 10 and 100, and the 80 single adds (median; mean with and without the one that passes the
deferred concept-graph update of 64 waiting chunks); resident memory after the load and the adds' peak.

    python benchmarks/scale/add_ab_1m.py /tmp/add_ab_1m > benchmarks/scale/results/add_1m_ab.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any


def summary(d: dict[str, Any]) -> dict[str, Any]:
    single = d["trickle_stream_s"]
    plain = [x for x in single if x < 5.0]  # the deferred update's add takes seconds
    return {
        "first_add_s": d["trickle_add_s"]["1"],
        "add_10_s": d["trickle_add_s"]["10"],
        "add_100_s": d["trickle_add_s"]["100"],
        "single_median_s": round(statistics.median(single), 4),
        "single_mean_s": round(statistics.mean(single), 4),
        "single_mean_without_deferred_s": round(statistics.mean(plain), 4),
        "deferred_update_s": [x for x in single if x >= 5.0],
        "rss_after_load_mb": d["update_rss_after_load_mb"],
        "peak_rss_adds_mb": d["peak_rss_trickle_mb"],
    }


def main() -> None:
    root = Path(sys.argv[1])
    rounds: dict[str, dict[str, Any]] = {"old": {}, "new": {}}
    for f in sorted(root.glob("*_*.json")):
        tree, r = f.stem.split("_")
        rounds[tree][r] = summary(json.loads(f.read_text(encoding="utf-8")))
    med = {}
    for tree, rs in rounds.items():
        keys = [k for k in next(iter(rs.values()), {}) if k != "deferred_update_s"]
        med[tree] = {k: statistics.median(v[k] for v in rs.values()) for k in keys}
    print(json.dumps({"median_of_rounds": med, "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
