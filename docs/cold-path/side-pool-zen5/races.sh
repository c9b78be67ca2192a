#!/bin/sh
# races.sh OLD NEW [OLD_AVX2 NEW_AVX2]: each a tree with bin/uring_b3sum and lib/ringsum/parallel_hash.so
# (OLD: side by side on TBB, NEW: on side_pool.c's helpers). The harness's cached 16,384 x 64 KiB tree:
# whole (-r, --files0-from, through xargs as it splits, and as runs of 512), runs of 512 and 2,047 of its
# files from its middle, and 2, 32 and 128 of them named; race.py's interleaved shuffled rounds, output
# to /dev/null as hyperfine's. With the AVX2 builds (make build/simd-avx2/bin/uring_b3sum of each), the
# whole tree again, where side by side wins. Run from the repository, nothing else running.
set -eu
OLD=$1/bin/uring_b3sum NEW=$2/bin/uring_b3sum
R=docs/cold-path/side-pool-zen5/race.py
T=$PWD/build/data/ringsum-tree-64K-57049d1613
[ -d "$T" ] || { echo "races.sh: no $T: run ringsum run configs/tree-hot.toml first" >&2; exit 2; }
W=$(mktemp -d)
find "$T" -type f | LC_ALL=C sort > "$W/l"
tr '\n' '\0' < "$W/l" > "$W/a"
warm() { xargs cat < "$W/l" > /dev/null; }
same() {   # the hashes agree, whichever way: sorted, as xargs and -r print the same paths
	for b in "$OLD" "$NEW"; do "$b" --files0-from "$W/a" | sort | md5sum; xargs -0 -a "$W/a" "$b" -- | sort | md5sum; done | uniq | wc -l
}
echo "== the same hashes from both builds, as a list and through xargs (1 line): $(same)"
warm; echo "== 16,384 x 64 KiB: -r, --files0-from, xargs (7-8 runs), xargs -n 512 (32 runs); 21 rounds"
python3 $R 21 "old-r=$OLD -r $T" "new-r=$NEW -r $T" "new-r-serial=$NEW --serial-hash -r $T" \
	"old-files0=$OLD --files0-from $W/a" "new-files0=$NEW --files0-from $W/a" \
	"old-xargs=xargs -0 -a $W/a $OLD --" "new-xargs=xargs -0 -a $W/a $NEW --" \
	"old-x512=xargs -0 -n 512 -a $W/a $OLD --" "new-x512=xargs -0 -n 512 -a $W/a $NEW --"
for n in 512 2047; do
	sed -n "6001,$((6000 + n))p" "$W/l" | tr '\n' '\0' > "$W/m"
	warm; echo "== $n of its files, from the 6,001st, as a list; 31 rounds"
	python3 $R 31 "old=$OLD --files0-from $W/m" "new=$NEW --files0-from $W/m" "new-serial=$NEW --serial-hash --files0-from $W/m"
done
for n in 2 32 128; do
	F=$(sed -n "9001,$((9000 + n))p" "$W/l" | tr '\n' ' ')
	warm; echo "== $n of its files named; 31 rounds"
	python3 $R 31 "old=$OLD $F" "new=$NEW $F" "b3sum=$PWD/.tools/bin/b3sum $F"
done
if [ $# -ge 4 ]; then
	OA=$3/bin/uring_b3sum NA=$4/bin/uring_b3sum
	warm; echo "== AVX2 builds: 16,384 x 64 KiB; 21 rounds"
	python3 $R 21 "old-r=$OA -r $T" "new-r=$NA -r $T" "old-r-serial=$OA --serial-hash -r $T" "new-r-serial=$NA --serial-hash -r $T" \
		"old-xargs=xargs -0 -a $W/a $OA --" "new-xargs=xargs -0 -a $W/a $NA --"
fi
rm -r "$W"
