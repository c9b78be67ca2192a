#!/bin/sh
# floor.sh [BIN]: how much of a list's time through xargs is xargs's own. The harness's cached tree
# of 16,384 x 64 KiB: uring_b3sum -r, --files0-from, through xargs as it splits the list, and xargs
# running /bin/true on the same runs (its reading, splitting and execs, nothing hashed); then one
# run of the first 128, 512, 2,048 and 8,192 files as a list, side by side's trial and forced one by
# one (--serial-hash): the cost of a run is a + b x files, a paid once a run; race.py's interleaved shuffled rounds, output to /dev/null. Run from the repository, nothing else running.
set -eu
B=${1:-build}/bin/uring_b3sum
R=docs/cold-path/side-pool-zen5/race.py
T=$PWD/build/data/ringsum-tree-64K-57049d1613
[ -d "$T" ] || { echo "floor.sh: no $T: run ringsum run configs/tree-hot.toml first" >&2; exit 2; }
W=$(mktemp -d)
find "$T" -type f | LC_ALL=C sort | tr '\n' '\0' > "$W/a"
echo "== runs xargs makes of the list: $(xargs -0 -a "$W/a" echo | wc -l)"
xargs -0 -a "$W/a" cat > /dev/null
echo "== 16,384 x 64 KiB cached: -r, --files0-from, through xargs, xargs /bin/true; 21 rounds"
python3 $R 21 "r=$B -r $T" "files0=$B --files0-from $W/a" "xargs=xargs -0 -a $W/a $B --" \
	"xargs-true=xargs -0 -a $W/a /bin/true"
find "$T" -type f | LC_ALL=C sort > "$W/l"
for n in 128 512 2048 8192; do head -n $n "$W/l" | tr '\n' '\0' > "$W/n$n"; done
echo "== the first N files as one list (--files0-from), the trial and --serial-hash; 21 rounds"
python3 $R 21 "n128=$B --files0-from $W/n128" "n512=$B --files0-from $W/n512" \
	"n2048=$B --files0-from $W/n2048" "n8192=$B --files0-from $W/n8192" \
	"s128=$B --serial-hash --files0-from $W/n128" "s2048=$B --serial-hash --files0-from $W/n2048" \
	"s8192=$B --serial-hash --files0-from $W/n8192" "true=/bin/true"
rm -r "$W"
