#!/usr/bin/env bash
# Fusion rules compared on the same runs: share fusion (the default; swept over lambda), score fusion (the default
# before it, host_weight 0.6) and the paper's ensemble (lambda x spill), with a real LLM graph as the host: MuSiQue
# train100's gpt-3.5-turbo-1106 extraction (../shared/data/README.md) replayed into the framework-free replay host
# (replay-core) and walked as HippoRAG 2 walks it (graph-walk), at kappa 1.0 and 0.5; then the LLM-free NER host on
# two more sets and the graph walk over 1,200-token packs. Every run also gives the host alone and the concept path
# alone at the same budgets. Results: benchmarks/dual_path/results/fusion_*.md / .json.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
C="--cache-dir benchmarks/cache --quiet"
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
L="--lambdas 0.2,0.3,0.4,0.5,0.6"
mkdir -p $R
# 1. the replayed gpt-3.5 graph: replay-core (entity / triple retrieval) and graph-walk (HippoRAG 2's walk)
for host in replay-core graph-walk; do
  g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --host $host:$KG \
    --host-option model=gpt-3.5-turbo-1106 --host-kappas 0.5,1.0 --host-kappa 1.0 $L $C \
    --out $R/fusion_${host}_musique_train100.json > $R/fusion_${host}_musique_train100.md
done
# 2. the same graph walk over 1,200-token packs (GraphRAG / LightRAG chunking)
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --pack-tokens 1200 \
  --host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106 --host-kappas 0.5,1.0 --host-kappa 1.0 $L $C \
  --out $R/fusion_graph-walk_musique_train100_pack1200.json > $R/fusion_graph-walk_musique_train100_pack1200.md
# 3. the LLM-free NER host (spaCy entities over the kept chunks) on the sets with gold passages
for set in musique/hipporag_train100 hotpotqa/hipporag_train100; do
  name=$(echo $set | tr / _)
  g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl --methods concept \
    --budgets 1000,2000,4000 --embedder minilm --host llama-index-ner --host-kappas 0.8 --host-kappa 0.8 $L $C \
    --out $R/fusion_ner_${name}.json > $R/fusion_ner_${name}.md
done
# 4. the released default (share fusion, lambda 0.2) rerun on the final code: the main table's "fused" rows
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --host graph-walk:$KG \
  --host-option model=gpt-3.5-turbo-1106 --host-kappas 0.5,1.0 --host-kappa 1.0 --lambdas 0.2 $C \
  --out $R/fusion_default_graph-walk_musique_train100.json > $R/fusion_default_graph-walk_musique_train100.md
python benchmarks/dual_path/fusion_summary.py $(ls $R/fusion_*.json | grep -v fusion_default_) > $R/fusion_summary.md
