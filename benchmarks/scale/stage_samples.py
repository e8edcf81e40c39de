"""Wall seconds per build stage from stack samples of a running build (py-spy), for a build whose own timings
name fewer stages (``G2ConSIndex.timings`` gained ``read`` and ``unit_index`` after the 3M build was started).

Sample the build's main thread every 10 s (``py-spy`` is not a dependency: ``pip install py-spy``)::

    while kill -0 $PID; do
      echo "$(date +%s) $(py-spy dump --nonblocking --pid $PID | awk '/"MainThread"/{f=1;next} /^Thread/{f=0} f' \\
        | sed 's/^ *//' | awk '{print $1}' | tac | tr '\\n' '>')" >> samples.log; sleep 10
    done
    python benchmarks/scale/stage_samples.py samples.log

Each sample is put in the first stage of :data:`STAGES` whose function is on its stack and counts until the next
sample; the first and last sample of each stage are printed too.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

#: (function on the stack, stage), the first match wins: the save and the unit index before the derive's steps,
#: the derive's steps before the derive, the stream's stages before the stream.
STAGES = (
    ("spool_chunks", "read"),
    ("_split_batches", "split_and_count"),
    ("Punkt", "split_and_count"),
    ("embed_texts", "embed"),
    ("_lexical_weights", "save: BM25 weights"),
    ("save_index", "save"),
    ("unit_index_for", "unit_index"),
    ("analyze", "derive: terms"),
    ("build_edges", "derive: edges"),
    ("concept_vectors", "derive: concept vectors"),
    ("pagerank", "derive: pagerank"),
    ("derive", "derive: other"),
    ("stream_store", "stream: other"),
    ("make_snapshot", "snapshot: other"),
)


def stage_seconds(lines: list[str], period: int = 10) -> dict[str, dict[str, int]]:
    """Per stage: seconds, and the offsets of its first and last sample from the first sample."""
    rows = [(int(t), frames) for t, _, frames in (line.partition(" ") for line in lines) if t.strip().isdigit()]
    out: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for i, (t, frames) in enumerate(rows):
        stage = next((name for key, name in STAGES if key in frames), "other")
        dt = rows[i + 1][0] - t if i + 1 < len(rows) else period
        s = out[stage]
        s["s"] = s.get("s", 0) + dt
        s.setdefault("from_s", t - rows[0][0])
        s["to_s"] = t - rows[0][0]
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples", type=Path)
    args = ap.parse_args()
    stages = stage_seconds(args.samples.read_text().splitlines())
    print(json.dumps(stages, indent=1))
    print("total", sum(s["s"] for s in stages.values()), "s")


if __name__ == "__main__":
    main()
