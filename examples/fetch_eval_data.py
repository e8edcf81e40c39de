"""Fetch the G2ConS paper's evaluation corpora (KET-RAG's MuSiQue and 2Wiki sets) and write them in this project's
JSONL schema (``examples/data/README.md``), for ``g2cons eval`` and the benchmarks.

    python examples/fetch_eval_data.py --out data/                 # downloads from GitHub (pinned commits)
    python examples/fetch_eval_data.py --out data/ --from DIR      # a KET-RAG clone instead (git clone ...)

Writes ``OUT/musique/ketrag500_{corpus,questions}.jsonl`` and ``OUT/2wikimultihopqa/ketrag500_*.jsonl``.

Sources (Apache-2.0): https://github.com/waetr/KET-RAG (Huang et al., KET-RAG, 2025), the exact corpora of the
G2ConS paper (arXiv:2510.24120): ``ragtest-musique`` (500 MuSiQue questions, Trivedi et al. 2022, CC BY 4.0;
commit 3630de3) and ``ragtest-2wiki`` (500 2WikiMultihopQA questions, Ho et al. 2020, Apache-2.0; commit
e4a2588, removed from the repository later). One passage per line of ``input/document.txt`` becomes one corpus
record (``ketrag_musique:<line number from 0>``; empty lines skipped); each ``qa-pairs.json`` entry one question with
``answers=[answer]``. The copies behind docs/results.md also carry MuSiQue's answer aliases and, for 55 MuSiQue
questions, gold passage ids (from the MuSiQue release, not fetched here), so recall measured on these files can
be slightly lower there.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

from g2cons_plugins.storage.outputs import atomic_write_text

REPO = "waetr/KET-RAG"
SETS = {
    # name: (commit, document path, qa-pairs path, id prefix, output folder, source label)
    "musique": (
        "3630de321d9452c40b245e246486947214333857",
        "ragtest-musique/input/document.txt",
        "ragtest-musique/qa-pairs/qa-pairs.json",
        "ketrag_musique",
        "musique",
        "KET-RAG ragtest-musique",
    ),
    "2wiki": (
        "e4a25889932820ba14f75758e90194403632c141",
        "ragtest-2wiki/input/document.txt",
        "ragtest-2wiki/input/qa-pairs.json",
        "ketrag_2wiki",
        "2wikimultihopqa",
        "KET-RAG ragtest-2wiki (commit e4a2588)",
    ),
}


def _read(path: str, commit: str, clone: Path | None) -> str:
    if clone is not None:
        return (clone / path).read_text(encoding="utf-8")
    url = f"https://raw.githubusercontent.com/{REPO}/{commit}/{path}"
    with urllib.request.urlopen(url, timeout=120) as resp:  # noqa: S310 (a fixed https URL)
        return resp.read().decode("utf-8")


def convert(document: str, qa_pairs: str, prefix: str, source: str) -> tuple[list[dict], list[dict]]:
    """``(corpus, questions)`` records in the project's schema from KET-RAG's two files."""
    corpus = [
        {"id": f"{prefix}:{i}", "title": None, "text": line}
        for i, line in enumerate(document.split("\n"))
        if line.strip()
    ]
    questions = []
    for q in json.loads(qa_pairs):
        kind = q["id"].split("__")[0] if "__" in q["id"] else None  # MuSiQue ids: "2hop__...", "3hop1__..."
        questions.append(
            {
                "id": q["id"],
                "question": q["question"],
                "answers": [q["answer"]],
                "supporting_passage_ids": None,
                "supporting_titles": None,
                "type": kind,
                "source": source,
            }
        )
    return corpus, questions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder to write the sets into")
    ap.add_argument("--from", dest="clone", type=Path, default=None, help="a KET-RAG clone instead of downloading")
    ap.add_argument("--sets", default="musique,2wiki", help="comma-separated: musique, 2wiki")
    args = ap.parse_args(argv)
    for name in args.sets.split(","):
        if name not in SETS:
            ap.error(f"--sets: unknown set {name!r} (known: {', '.join(SETS)})")
        commit, doc_path, qa_path, prefix, folder, source = SETS[name]
        if args.clone is not None and not (args.clone / doc_path).is_file():
            print(f"{name}: {args.clone / doc_path} not found (check out commit {commit[:7]})", file=sys.stderr)
            return 2
        corpus, questions = convert(_read(doc_path, commit, args.clone), _read(qa_path, commit, args.clone), prefix,
                                    source)
        for kind, rows in (("corpus", corpus), ("questions", questions)):
            target = args.out / folder / f"ketrag500_{kind}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        print(f"{name}: {len(corpus):,} passages, {len(questions):,} questions -> {args.out / folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
