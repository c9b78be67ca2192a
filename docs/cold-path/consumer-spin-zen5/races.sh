#!/bin/sh
# races.sh OLD NEW: the consumer's spin, by hand (docs/cold-path/consumer-spin-zen5/README.md).
# OLD, NEW: uring_b3sum binaries (lib/ringsum/parallel_hash.so beside their bin/). Needs root only
# for nothing; run from the checkout, nothing else running. Prints what races.log holds.
set -eu
OLD=$1 NEW=$2
H=docs/cold-path/mapped-side-zen5-run/hotrace.py
T=$(ls -d build/data/ringsum-tree-64K-* | head -1)      # the ledger's 16,384 x 64 KiB tree
LIST=$(mktemp) CHUNK=$(mktemp)
find "$T" -type f -print0 | LC_ALL=C sort -z > "$LIST"
tr '\0' '\n' < "$LIST" | sed -n '7417,9888p' | tr '\n' '\0' > "$CHUNK"   # xargs's 4th run of 2,472
warm() { xargs -0 -a "$LIST" cat > /dev/null; }
race() { warm; python3 "$H" "$@"; }
echo "== python as the parent (subprocess), 21 rounds"
race 21 "old-r=$OLD -r $T" "new-r=$NEW -r $T" "old-xargs=xargs -0 -a $LIST $OLD --" "new-xargs=xargs -0 -a $LIST $NEW --" \
	"old-files0=$OLD --files0-from $LIST" "new-files0=$NEW --files0-from $LIST" \
	"old-2472=$OLD --files0-from $CHUNK" "new-2472=$NEW --files0-from $CHUNK"
echo "== a busy loop on one core beside, 15 rounds"
sh -c 'while :; do :; done' & HOG=$!
race 15 "old-r=$OLD -r $T" "new-r=$NEW -r $T" "old-xargs=xargs -0 -a $LIST $OLD --" "new-xargs=xargs -0 -a $LIST $NEW --"
kill $HOG
echo "== one core (taskset), 15 rounds"
race 15 "old-r=taskset -c 0 $OLD -r $T" "new-r=taskset -c 0 $NEW -r $T"
echo "== a shell that has just started as the parent (hyperfine -N runs sh -c 'CMD; :'), 2,472 files, 40 runs, twice"
for i in 1 2; do
	warm
	hyperfine -N -w 5 -r 40 --export-json /tmp/races-hf.json "sh -c '$OLD --files0-from $CHUNK; :'" "sh -c '$NEW --files0-from $CHUNK; :'" > /dev/null 2>&1
	python3 -c "import json; [print(f\"{r['command'].split()[2]:40s} median {r['median']*1e3:.1f} ms  cpu/wall {(r['user']+r['system'])/r['mean']:.2f}\") for r in json.load(open('/tmp/races-hf.json'))['results']]"
done
rm -f "$LIST" "$CHUNK" /tmp/races-hf.json
