#!/bin/sh
# forced.sh FORCE FORCE_SLEEP: builds with force.patch (SIDE_FORCE=1 side by side, 0 one by one, no
# trial), the second with sleep-at-once.patch too (a helper sleeps as soon as its batch is done).
# The whole cached 64 KiB tree (-r), with AVX-512; race.py's rounds.
set -eu
R=docs/cold-path/side-pool-zen5/race.py
T=$PWD/build/data/ringsum-tree-64K-57049d1613
F=$1/bin/uring_b3sum S=$2/bin/uring_b3sum
find "$T" -type f | xargs cat > /dev/null
echo "== 16,384 x 64 KiB, -r: one by one, side by side (helpers yield 50 us, then sleep; or sleep at once), the trial; 21 rounds"
python3 $R 21 "one=env SIDE_FORCE=0 $F -r $T" "side=env SIDE_FORCE=1 $F -r $T" "side-sleep=env SIDE_FORCE=1 $S -r $T" "trial=$F -r $T"
