#!/usr/bin/env bash
# Cut MS GraphRAG's indexing cost with g2cons: index only the core chunks of a GraphRAG project's input.
#   bash examples/graphrag_select.sh [PROJECT]          (default: ./ragtest, as in GraphRAG's quickstart)
# With an existing project (`graphrag init --root PROJECT`, documents in PROJECT/input) it uses its settings.yaml;
# without one it makes a small offline demo project from the bundled MuSiQue passages. Run from the repository root.
# Needs only g2cons-plugins; the indexing step needs `pip install graphrag` and your LLM key, as usual.
set -euo pipefail
ROOT="${1:-ragtest}"

if [ ! -f "$ROOT/settings.yaml" ]; then  # demo project laid out like `graphrag init` makes it
  mkdir -p "$ROOT/input" "$ROOT/prompts"
  python - "$ROOT" <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
data = pathlib.Path("examples/data/musique_excerpt_corpus.jsonl")
for i, line in enumerate(data.read_text(encoding="utf-8").splitlines()):
    r = json.loads(line)
    (root / "input" / f"p{i:03d}.txt").write_text(f"{r['title']}\n{r['text']}", encoding="utf-8")
# the document-processing settings of `graphrag init`; cl100k_base so that the demo runs offline
(root / "settings.yaml").write_text("""\
completion_models:
  default_completion_model:
    model_provider: openai
    model: gpt-4.1-mini
    api_key: ${GRAPHRAG_API_KEY}
input:
  type: text
chunking:
  type: tokens
  size: 1200
  overlap: 100
  encoding_model: cl100k_base
input_storage:
  type: file
  base_dir: "input"
extract_graph:
  completion_model_id: default_completion_model
  prompt: "prompts/extract_graph.txt"
  entity_types: [organization,person,geo,event]
  max_gleanings: 1
""", encoding="utf-8")
# a stand-in prompt with GraphRAG's placeholders (`graphrag init` writes the real one)
(root / "prompts" / "extract_graph.txt").write_text(
    "Identify all entities of types [{entity_types}] in the text and all relationships among them.\n"
    "Text: {input_text}\nOutput:", encoding="utf-8")
PY
fi

# 1. estimate: what would indexing only the core chunks save? (writes nothing)
g2cons select --root "$ROOT" --kappa 0.8 --dry-run --price-per-mtok 0.15 --embedder wordllama --quiet

# 2. write the core run's GraphRAG root: $ROOT/g2cons/{settings.yaml,input/,selection_report.json,graph/}
g2cons select --root "$ROOT" --kappa 0.8 --price-per-mtok 0.15 --embedder wordllama --quiet
python -c "import json,sys; r=json.load(open(sys.argv[1]))['host_cost']; \
print(f\"calls {r['full']['calls']} -> {r['selected']['calls']}, USD {r['full']['usd']:.4f} -> {r['selected']['usd']:.4f}\")" \
  "$ROOT/g2cons/selection_report.json"

# 3. (optional, offline) GraphRAG's own input loader reads the core folder: pip install graphrag-input
python - "$ROOT/g2cons/input" <<'PY' || echo "graphrag-input not installed; skipped the loader check"
import asyncio, sys
from graphrag_input import InputConfig, create_input_reader
from graphrag_storage.file_storage import FileStorage
docs = asyncio.run(create_input_reader(InputConfig(), FileStorage(base_dir=sys.argv[1])).read_files())
print(f"graphrag input loader: {len(docs)} documents")
PY

# 4. index as usual (needs an LLM): cp "$ROOT/.env" "$ROOT/g2cons/"; graphrag index --root "$ROOT/g2cons"
# 5. questions the KG misses: the concept path covers every chunk, dropped ones included
g2cons query "$ROOT/g2cons/graph" "What country was the author of Brand a citizen of?" --budget 2000
