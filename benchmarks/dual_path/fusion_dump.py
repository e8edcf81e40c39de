"""Dump both paths' ranked candidates per question once, so fusion rules can be compared offline in seconds.

For every question and budget beta: the concept path alone at beta (units in rank order: unit id, score, cosine
to the query) and today's share fusion at each ``--lambdas`` (unit ids in context order); for every kappa: the
host's ranked items (chunk id, host score, and the chunk's units with their cosine to the query). Unit chunk ids,
token counts and texts are stored once. Read by ``fusion_rules_offline.py``. Same index, host and budgets as
``g2cons eval`` in ``fusion_compare.sh`` (default config, ``--embedder minilm``, ``--cache-dir``).

    python benchmarks/dual_path/fusion_dump.py --corpus C --questions Q --host graph-walk:KG \
        --host-option model=gpt-3.5-turbo-1106 --kappas 0.5,1.0 --out dump.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any

import numpy as np

from g2cons_plugins.cli.eval import host_options
from g2cons_plugins.config import G2ConSConfig
from g2cons_plugins.eval.evaluation import embed_queries, load_questions, read_jsonl
from g2cons_plugins.fusion import fuse_report
from g2cons_plugins.fusion.matching import distinct, host_units, resolve_host_items
from g2cons_plugins.hosts import load_host
from g2cons_plugins.index import G2ConSIndex
from g2cons_plugins.retrieval import DenseScores, retrieve


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--host-option", action="append", default=[])
    ap.add_argument("--kappas", default="0.5,1.0")
    ap.add_argument("--budgets", default="1000,2000,4000")
    ap.add_argument("--lambdas", default="0.2")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cache-dir", default="benchmarks/cache")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    budgets = [int(x) for x in a.budgets.split(",")]
    kappas = [float(x) for x in a.kappas.split(",")]
    lambdas = [float(x) for x in a.lambdas.split(",")]
    questions = load_questions(a.questions)
    index = G2ConSIndex.build(read_jsonl(a.corpus), embedder=a.embedder, config=G2ConSConfig(),
                              cache_dir=a.cache_dir, show_progress=False)  # fmt: skip
    snap = index.snapshot
    st = snap.stored
    texts: dict[str, str] = {}
    tokens: dict[str, int] = {}
    parent: dict[str, str] = {}

    def note(unit_pos: int) -> str:
        u = st.units[unit_pos]
        texts[u.id] = u.text
        tokens[u.id] = int(st.unit_tokens[unit_pos])
        parent[u.id] = u.parent_id
        return str(u.id)

    qvecs = embed_queries(index, [q["question"] for q in questions])
    rows: list[dict[str, Any]] = []
    for q, v in zip(questions, qvecs, strict=True):
        con = {}
        for b in budgets:
            alone = retrieve(index, q["question"], beta=b, query_vector=v)
            pos = [snap.unit_pos[c.unit_id] for c in alone]
            cos = DenseScores(snap, v).of(np.asarray(pos, dtype=np.int64)).tolist() if pos else []
            con[str(b)] = [[note(p), round(float(c.score), 6), round(float(x), 6)]
                           for p, c, x in zip(pos, alone, cos, strict=True)]  # fmt: skip
        gold = q.get("supporting_passage_ids") or []
        rows.append({"question": q["question"], "answers": q["answers"], "gold": gold, "concept": con, "host": {},
                     "share": {}})  # fmt: skip
    host = load_host(a.host, **host_options(a.host_option))
    prompt = int(host.prompt_tokens_per_call)
    for kappa in kappas:
        host.build(index, index.select(kappa=kappa, prompt_tokens_per_call=prompt), show_progress=False)
        for row, q, v in zip(rows, questions, qvecs, strict=True):
            hitems = resolve_host_items(index, host.retrieve(q["question"]))
            dense = DenseScores(snap, v)
            items = []
            for h in distinct(hitems):
                units = host_units(snap, h)
                it: dict[str, Any] = {"chunk_id": h.chunk_id, "score": h.score}
                if units is None:
                    it["text"] = h.text
                    it["n_tokens"] = snap.count_tokens([h.text])[0] if h.text else 0
                else:
                    cos = dense.of(units)
                    it["units"] = [
                        [note(int(u)), round(float(c), 6)] for u, c in zip(units.tolist(), cos.tolist(), strict=True)
                    ]
                items.append(it)
            row["host"][str(kappa)] = items
            for b in budgets:
                for lam in lambdas:
                    alone = retrieve(index, q["question"], beta=b, query_vector=v)
                    sh = fuse_report(index, hitems, q["question"], beta=b, lambda_=lam, query_vector=v,
                                     concept=alone, rule="share").items  # fmt: skip
                    row["share"][f"{kappa}|{b}|{lam}"] = [
                        f.unit_id if f.unit_id is not None else "\0" + f.text for f in sh
                    ]
        print(f"kappa {kappa} done", file=sys.stderr)
    out = {"settings": vars(a), "units": {k: [parent[k], tokens[k], texts[k]] for k in texts}, "questions": rows}
    d = os.path.dirname(os.path.abspath(a.out))
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
