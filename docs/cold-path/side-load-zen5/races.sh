#!/bin/sh
# races.sh OLD NEW: each a tree with bin/uring_b3sum and lib/ringsum/parallel_hash.so. Cached trees of
# 64 KiB files (the harness's 16,384) and 1,024 files of 192 KiB, the first N of each as a list
# (--files0-from) and named (up to 129), and the whole 64 KiB tree as -r and through xargs;
# hotrace.py's interleaved rounds, against an identical copy of OLD for the tree.
# Run from the repository, the trees cached or not: each race reads them first.
set -eu
OLD=$1/bin/uring_b3sum NEW=$2/bin/uring_b3sum
H=docs/cold-path/mapped-side-zen5-run/hotrace.py
T64=build/data/ringsum-tree-64K-57049d1613 T192=build/data/x-tree-192K
[ -d "$T64" ] || { echo "races.sh: no $T64: run ringsum run configs/tree-hot.toml first" >&2; exit 2; }
if [ ! -d "$T192" ]; then
	mkdir -p "$T192.tmp"
	for i in $(seq -w 0 1023); do head -c 196608 /dev/urandom > "$T192.tmp/f0$i"; done
	sync && mv "$T192.tmp" "$T192"
fi
W=$(mktemp -d)
find "$PWD/$T64" -type f | sort > "$W/l64"
find "$PWD/$T192" -type f | sort > "$W/l192"
warm() { xargs cat < "$W/l64" > /dev/null; xargs cat < "$W/l192" > /dev/null; }
for n in 2 16 64 128 292 1170 2340 16384; do
	head -n "$n" "$W/l64" | tr '\n' '\0' > "$W/a"
	warm; echo "== 64 KiB files, $n as a list"
	python3 $H 21 "old=$OLD --files0-from $W/a" "new=$NEW --files0-from $W/a" | grep -v same
done
for n in 2 8 32 64 128 129; do
	warm; echo "== 64 KiB files, $n named"
	F=$(head -n "$n" "$W/l64" | tr '\n' ' ')
	python3 $H 21 "old=$OLD $F" "new=$NEW $F" "b3sum=$PWD/.tools/bin/b3sum $F" | grep -v same
done
for n in 64 256 1024; do
	head -n "$n" "$W/l192" | tr '\n' '\0' > "$W/a"
	warm; echo "== 192 KiB files, $n as a list"
	python3 $H 21 "old=$OLD --files0-from $W/a" "new=$NEW --files0-from $W/a" | grep -v same
done
tr '\n' '\0' < "$W/l64" > "$W/a"
mkdir -p "$W/copy/bin" "$W/copy/lib/ringsum"
cp "$OLD" "$W/copy/bin/" && cp "$1/lib/ringsum/parallel_hash.so" "$W/copy/lib/ringsum/"
warm; echo "== 64 KiB files, 16384: -r and through xargs (7 runs), the old build twice"
python3 $H 31 "old-r=$OLD -r $PWD/$T64" "copy-r=$W/copy/bin/uring_b3sum -r $PWD/$T64" "new-r=$NEW -r $PWD/$T64" \
	"old-xargs=xargs -0 -a $W/a $OLD --" "copy-xargs=xargs -0 -a $W/a $W/copy/bin/uring_b3sum --" \
	"new-xargs=xargs -0 -a $W/a $NEW --" | grep -v same
rm -r "$W"
