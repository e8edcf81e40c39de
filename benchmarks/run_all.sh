#!/usr/bin/env bash
# The exact commands behind benchmarks/results/ (minilm embeddings are cached in benchmarks/cache; a cold run
# embeds ~31k texts per 6.8k passages, about 6 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
D=../shared/data
R=benchmarks/results
C="--cache-dir benchmarks/cache --quiet"
# every method side by side, selection vs random, the LLM-free host KG (kappa x lambda sweep) and fused G2ConS;
# the report (Markdown + PNG) goes to benchmarks/report/<set>_minilm/
for set in musique/ketrag500 2wikimultihopqa/ketrag500 musique/hipporag_train100 hotpotqa/hipporag_train100; do
  name=$(echo $set | tr / _)
  g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl \
    --methods dense,bm25,keyword,concept,concept-paper,concept-ppr,concept-e2,ablation-A,ablation-B,ablation-C,ablation-D \
    --budgets 1000,2000,4000,12000 \
    --embedder minilm --selection --host llama-index-ner --host-kappa 0.8 --lambda 0.4 --spill $C \
    --out $R/${name}_minilm.json --report benchmarks/report/${name}_minilm > $R/${name}_minilm.md
done
# retrieval unit size (wordllama): passages vs 150-token units, and 1,200-token packed chunks whole vs split
for pk in 0 1200; do for ut in 0 150; do
  g2cons eval --corpus $D/musique/ketrag500_corpus.jsonl --questions $D/musique/ketrag500_questions.jsonl \
    --methods dense,keyword,concept,concept-paper --budgets 2000,4000,12000 --embedder wordllama $C \
    --pack-tokens $pk --unit-tokens $ut --out $R/units_wordllama_pack${pk}_unit${ut}.json
done; done
python benchmarks/plot.py $R/musique_ketrag500_minilm.json $R/musique_hipporag_train100_minilm.json \
  $R/hotpotqa_hipporag_train100_minilm.json $R/2wikimultihopqa_ketrag500_minilm.json --out $R/cr_minilm.png
python benchmarks/adapter_overhead.py --out $R/adapter_overhead.json
python benchmarks/perf.py --out $R/perf.json > $R/perf.txt
