#!/usr/bin/env bash
# The small adds at 1M passages under two code trees in the same session, rounds taking turns: OLD_CODE on
# OLD_INDEX (built by it), this tree on NEW_INDEX. Each job is `bench.py --job update --trickle-only` in a fresh
# process (load, add 1, 10 and 100 new chunks, then 80 one at a time). OLD_CODE runs this tree's bench.py with its
# own library (PYTHONPATH). results/add_1m_ab.json: OLD_CODE eeeecbe (the code of the 0.15 s figure), OLD_INDEX
# built by it, NEW_INDEX = realign_index.py's aligned copy of OLD_INDEX (what a save writes today).
#   OLD_CODE=/tmp/old OLD_INDEX=/tmp/idx1m_old NEW_INDEX=/tmp/idx1m_aligned bash benchmarks/scale/add_ab_1m.sh
#   python benchmarks/scale/add_ab_1m.py /tmp/add_ab_1m > benchmarks/scale/results/add_1m_ab.json
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/add_ab_1m}
mkdir -p "$OUT"
for r in ${ROUNDS:-1 2 3}; do
  sync
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for w in $order; do
    if [ "$w" = old ]; then
      PYTHONPATH="$OLD_CODE" python benchmarks/scale/bench.py --job update --n 1000000 --seed 0 --path "$OLD_INDEX" \
        --trickle-only > "$OUT/old_$r.json"
    else
      python benchmarks/scale/bench.py --job update --n 1000000 --seed 0 --path "$NEW_INDEX" --trickle-only \
        > "$OUT/new_$r.json"
    fi
  done
done
