#!/usr/bin/env bash
# The exact commands behind benchmarks/embedding_work/results/ (each .md is the command's stdout; minilm vectors
# from the shared embedding cache, 2 shared cores):
#   G2CONS_DATA=/work/shared/data G2CONS_CACHE=/tmp/dp/cache bash benchmarks/embedding_work/run.sh
# 1. CR of the default concept path (and of the graph-walking strategies) per concept-vector source (run.py);
# 2. texts, tokens and seconds a build embeds with and without the sentences (embed_cost.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}
CACHE=${G2CONS_CACHE:-benchmarks/cache}
R=benchmarks/embedding_work/results
SETS="musique/ketrag500 2wikimultihopqa/ketrag500 hotpotqa/hipporag_train100 musique/hipporag_train100"
mkdir -p $R
export HF_HUB_OFFLINE=1
for set in $SETS; do
  name=$(echo $set | tr / _)
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  nice -n 10 python benchmarks/embedding_work/run.py --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl \
    --embedder minilm --cache-dir $CACHE --budgets 1000,2000,4000 --out $R/${name}_minilm.json > $R/${name}_minilm.md
done
if [ -n "${ONLY:-}" ]; then exit 0; fi
nice -n 10 python benchmarks/embedding_work/embed_cost.py --embedder minilm --cache-dir $CACHE \
  --corpus $(for set in $SETS; do echo $D/${set}_corpus.jsonl; done) > $R/embed_cost_minilm.md
