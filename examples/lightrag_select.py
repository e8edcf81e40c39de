"""Feed ``g2cons select`` output to LightRAG and count the LLM calls its KG build makes. Offline: LightRAG's LLM and
embedding functions are replaced by counting stand-ins (they extract nothing), so only the call count is real.

    pip install lightrag-hku            # no torch needed
    python examples/lightrag_select.py [--input FOLDER] [--kappa 0.8] [--n 40] [--keep]

Input: the first --n passages of the bundled MuSiQue excerpt, one .txt file each, or the first --n files of
--input (all of them without --n). The selection is the CLI's ``g2cons select --host lightrag`` (LightRAG's
chunking, its o200k_base tokenizer, its prompt and its default gleaning: 2 calls per chunk), and LightRAG runs with
its defaults too, so the calls counted here are the ones the report predicts. With your own folder, replace
``counting_llm``/``offline_embed`` by your real functions (e.g. ``lightrag.llm.openai.gpt_4o_mini_complete`` and
``openai_embed``) and insert ``core/`` only: the entity extraction calls drop to the kept share. The work folder
is removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from g2cons_plugins.cli import main as g2cons
from g2cons_plugins.text import get_tokenizer

DATA = Path(__file__).parent / "data" / "musique_excerpt_corpus.jsonl"


class O200k:
    """LightRAG's default tokenizer (o200k_base), from the copy g2cons bundles: tiktoken would download it."""

    def encode(self, s: str) -> list[int]:
        return get_tokenizer("o200k_base").encode(s)

    def decode(self, ids: list[int]) -> str:
        return get_tokenizer("o200k_base").decode(ids)


async def offline_embed(texts: list[str], **kw: Any) -> np.ndarray:
    v = np.array([np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[:32] for t in texts], np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def insert_folder(folder: Path, work: Path) -> int:
    """Insert every .txt/.md file of ``folder`` into a fresh LightRAG; return the number of LLM calls."""
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc, Tokenizer

    calls: list[str] = []

    async def counting_llm(
        prompt: str, system_prompt: str | None = None, history_messages: Any = None, **kw: Any
    ) -> str:
        calls.append(prompt)
        return ""

    rag = LightRAG(
        working_dir=str(work / f"rag_{folder.name}"),
        workspace=folder.name,
        llm_model_func=counting_llm,
        embedding_func=EmbeddingFunc(embedding_dim=32, func=offline_embed, max_token_size=8192),
        tokenizer=Tokenizer("o200k_base", O200k()),  # LightRAG's defaults otherwise (chunking, gleaning)
    )
    await rag.initialize_storages()
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".txt", ".md"))
    rel = [p.relative_to(folder).as_posix() for p in files]
    await rag.ainsert([p.read_text(encoding="utf-8") for p in files], ids=rel, file_paths=rel)
    await rag.finalize_storages()
    return len(calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", type=Path, default=None, help="folder of .txt/.md files (default: MuSiQue excerpt)")
    ap.add_argument("--kappa", type=float, default=0.8)
    ap.add_argument("--n", type=int, default=None, help="use the first N passages / files (excerpt default: 40)")
    ap.add_argument("--embedder", default="hash", help="g2cons embedder: hash (fast) | wordllama | minilm")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (input copy, core/, LightRAG dirs)")
    args = ap.parse_args()
    import logging

    logging.getLogger("lightrag").setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="g2cons-lightrag-"))
    try:
        run(args, work)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    """Select with the CLI, insert the whole input and the core into LightRAG, and compare the calls."""
    src = work / "input"
    src.mkdir()
    if args.input is None:
        for i, line in enumerate(DATA.read_text(encoding="utf-8").splitlines()[: args.n or 40]):
            r = json.loads(line)
            (src / f"p{i:03d}.txt").write_text(f"{r['title']}\n{r['text']}", encoding="utf-8")
    else:
        files = sorted(p for p in args.input.rglob("*") if p.is_file() and p.suffix in (".txt", ".md"))
        for p in files[: args.n] if args.n else files:
            target = src / p.relative_to(args.input)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
    core = work / "core"
    cmd = ["select", str(src), "--host", "lightrag", "--kappa", str(args.kappa), "--out", str(core)]
    rc = g2cons([*cmd, "--embedder", args.embedder, "--quiet"])
    if rc:
        raise SystemExit(rc)
    report = json.loads((work / "core.selection_report.json").read_text(encoding="utf-8"))
    full_calls = asyncio.run(insert_folder(src, work))
    core_calls = asyncio.run(insert_folder(core, work))
    hc = report["host_cost"]
    n = report["n_kept"] + report["n_dropped"]
    print(f"\ng2cons select --host lightrag kept {report['n_kept']}/{n} chunks at kappa {args.kappa} "
          f"({hc['calls_per_chunk']} calls per chunk: extraction + gleaning)")
    print(f"LightRAG LLM calls: all input {full_calls} (report: {hc['full']['calls']}), "
          f"core {core_calls} (report: {hc['selected']['calls']}), {core_calls / max(full_calls, 1):.0%} of the bill")


if __name__ == "__main__":
    main()
