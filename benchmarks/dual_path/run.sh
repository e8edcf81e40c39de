#!/usr/bin/env bash
# The dual path measured against a real LLM graph: the exact commands behind benchmarks/dual_path/results/.
# MuSiQue train100 with its gpt-3.5-turbo-1106 OpenIE extraction (../shared/data/README.md) replayed as the host KG
# (only the kept chunks' triples), passages as they are and packed into 1,200-token chunks (GraphRAG / LightRAG);
# then the same fusion default with the LLM-free spaCy NER host on the four multi-hop sets. About 40 min on 2 cores
# with a warm embedding cache (benchmarks/cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
C="--cache-dir benchmarks/cache --quiet"
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
mkdir -p $R
# 1. host = the replayed extraction in a LlamaIndex PropertyGraphIndex (VectorContextRetriever over the embedded
#    entities + NEREntityRetriever); kappa sweep, the paper's ensemble over lambda and score fusion over host_weight
for pk in 0 1200; do
  g2cons eval $M --methods dense,bm25,hybrid,hybrid-weighted,concept --budgets 1000,2000,4000 --embedder minilm \
    --pack-tokens $pk --host replay:$KG --host-option model=gpt-3.5-turbo-1106 --host-kappas 0.2,0.5,0.8,1.0 --host-kappa 0.5 --lambdas 0.2,0.4,0.6,0.8 \
    --host-weights 0.2,0.6 $C --out $R/replay_musique_train100_pack$pk.json > $R/replay_musique_train100_pack$pk.md
done
# 2. selection judged by the real graph: host KG (framework-free replay host) built from each selector's kept chunks
g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --selection-downstream \
  --host replay-core:$KG --host-option model=gpt-3.5-turbo-1106 --host-kappas 0.5 --lambdas 0.4 --downstream-kappas 0.2,0.5,0.8 \
  --downstream-selectors default,pagerank,shortest,knn_pagerank,length-matched-random $C \
  --out $R/selection_downstream_replay.json > $R/selection_downstream_replay.md
# 3. the same fusion default with the LLM-free NER host on the four multi-hop sets
for set in musique/hipporag_train100 hotpotqa/hipporag_train100 musique/ketrag500 2wikimultihopqa/ketrag500; do
  name=$(echo $set | tr / _)
  g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl --methods concept \
    --budgets 1000,2000,4000 --embedder minilm --host llama-index-ner --host-kappas 0.5,0.8 --host-kappa 0.8 \
    --lambdas 0.4 $C --out $R/ner_${name}.json > $R/ner_${name}.md
done
python benchmarks/dual_path/summary.py $R/replay_*.json $R/ner_*.json > $R/summary.md
python benchmarks/selection_downstream_summary.py $R/selection_downstream_replay.json > $R/selection_downstream_replay_summary.md
