#!/usr/bin/env bash
# Cut MS GraphRAG's indexing cost with g2cons: keep the core chunks of the input folder, index only those.
#   bash examples/graphrag_select.sh [RAGTEST_ROOT]          (default root: ./ragtest, as in GraphRAG's quickstart)
# Needs only g2cons-plugins; the last step needs `pip install graphrag` and your LLM key, as usual.
set -euo pipefail
ROOT="${1:-ragtest}"

if [ ! -d "$ROOT/input" ]; then  # demo input: bundled MuSiQue passages, one .txt each (GraphRAG's text input layout)
  mkdir -p "$ROOT/input"
  python - "$ROOT/input" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
data = pathlib.Path("examples/data/musique_excerpt_corpus.jsonl")  # run from the repository root
for i, line in enumerate(data.read_text(encoding="utf-8").splitlines()):
    r = json.loads(line)
    (out / f"p{i:03d}.txt").write_text(f"{r['title']}\n{r['text']}", encoding="utf-8")
PY
fi

# 1. estimate: what would indexing only the core chunks save? (writes nothing)
g2cons select "$ROOT/input" --kappa 0.8 --dry-run --price-per-mtok 0.15 --embedder wordllama

# 2. keep the full input aside and write the core chunks where GraphRAG reads its input
#    (same 1,200/100 cl100k token chunking as GraphRAG's defaults, so every written file is one GraphRAG chunk)
mv "$ROOT/input" "$ROOT/input_all"
g2cons select "$ROOT/input_all" --kappa 0.8 --out "$ROOT/input" --graph "$ROOT/g2cons" --embedder wordllama --quiet
cat "$ROOT/input/selection_report.json" | python -c "import json,sys; r=json.load(sys.stdin); \
print(f\"kept {r['n_kept']} of {r['n_kept']+r['n_dropped']} chunks; {r['calls_avoided']} LLM calls avoided\")"

# 3. (optional, offline) check that GraphRAG's own input loader reads the folder: pip install graphrag-input
python - "$ROOT/input" <<'PY' || echo "graphrag-input not installed; skipped the loader check"
import asyncio, sys
from graphrag_input import InputConfig, create_input_reader
from graphrag_storage.file_storage import FileStorage
docs = asyncio.run(create_input_reader(InputConfig(), FileStorage(base_dir=sys.argv[1])).read_files())
print(f"graphrag input loader: {len(docs)} documents")
PY

# 4. index as usual (needs an LLM): graphrag index --root "$ROOT"
# 5. questions the KG misses: the concept path covers every chunk, dropped ones included
g2cons query "$ROOT/g2cons" "Who developed person-centered therapy?" --budget 2000
