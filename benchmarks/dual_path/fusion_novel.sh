#!/usr/bin/env bash
# Novel-first fusion (the default) against share fusion (the default before it) on the same runs: every `g2cons eval
# --host` run sweeps both rules over lambda. Hosts: HippoRAG 2's walk over MuSiQue train100's replayed gpt-3.5
# extraction (graph-walk), passages as they are and packed into 1,200-token chunks, at kappa 0.5 and 1.0; the LLM-free
# NER host on the four multi-hop sets at kappa 0.8 (the KET-RAG 500-question sets were not looked at while the rule
# was chosen). Results: benchmarks/dual_path/results/novel_*.md / .json and novel_summary.md (the main table's "fused"
# row is the default, novel-first; a run before the switch gave the same swept columns cell for cell). Rerun as is
# with the concept path's linked head (retrieval.link_head): every CR cell of every rule equal to the run before it,
# only the concept path's recall@k and the timings moved. Rerun with the first novel passage from any rank in a
# context of 20 passages or more (fusion.novel.NOVEL_ANY_RANK_FROM; G2CONS_DATA=/work/shared/data, so the reports
# name the sets by that path, on cores shared with a 1M-passage build: the timings are not comparable): only novel@*
# cells moved.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${G2CONS_DATA:-../shared/data}  # the shared benchmark sets
R=benchmarks/dual_path/results
C="--cache-dir benchmarks/cache --quiet"
KG=$D/musique/hipporag_train100_kg_gpt35.jsonl
M="--corpus $D/musique/hipporag_train100_corpus.jsonl --questions $D/musique/hipporag_train100_questions.jsonl"
L="--lambdas 0.1,0.2,0.3"
mkdir -p $R
for pk in 0 1200; do
  g2cons eval $M --methods concept --budgets 1000,2000,4000 --embedder minilm --pack-tokens $pk \
    --host graph-walk:$KG --host-option model=gpt-3.5-turbo-1106 --host-kappas 0.5,1.0 --host-kappa 1.0 $L $C \
    --out $R/novel_graph-walk_musique_train100_pack$pk.json > $R/novel_graph-walk_musique_train100_pack$pk.md
done
for set in musique/hipporag_train100 hotpotqa/hipporag_train100 musique/ketrag500 2wikimultihopqa/ketrag500; do
  name=$(echo $set | tr / _)
  g2cons eval --corpus $D/${set}_corpus.jsonl --questions $D/${set}_questions.jsonl --methods concept \
    --budgets 1000,2000,4000 --embedder minilm --host llama-index-ner --host-kappas 0.8 --host-kappa 0.8 $L $C \
    --out $R/novel_ner_${name}.json > $R/novel_ner_${name}.md
done
python benchmarks/dual_path/fusion_summary.py $R/novel_*.json > $R/novel_summary.md
