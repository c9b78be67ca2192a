#!/bin/sh
# rules.sh NEW NO_DEFERRAL NO_UP_FRONT: the commit's build, and with no-deferral.patch (side by side
# tried from the first small file) or no-up-front.patch (more than 128 named files wait for 8 MiB too).
# When the helpers start, on the cached 64 KiB tree: 2, 32 and 128 files named, 512 as a list, and
# xargs's runs (as it splits the 16,384, and of 512); race.py's rounds.
set -eu
N=$1/bin/uring_b3sum D=$2/bin/uring_b3sum U=$3/bin/uring_b3sum
R=docs/cold-path/side-pool-zen5/race.py
T=$PWD/build/data/ringsum-tree-64K-57049d1613
W=$(mktemp -d)
find "$T" -type f | LC_ALL=C sort > "$W/l"
tr '\n' '\0' < "$W/l" > "$W/a"
warm() { xargs cat < "$W/l" > /dev/null; }
for n in 2 32 128; do
	F=$(sed -n "9001,$((9000 + n))p" "$W/l" | tr '\n' ' ')
	warm; echo "== $n of its files named; 31 rounds"
	python3 $R 31 "new=$N $F" "no-deferral=$D $F"
done
sed -n "6001,6512p" "$W/l" | tr '\n' '\0' > "$W/m"
warm; echo "== 512 of its files as a list; 31 rounds"
python3 $R 31 "new=$N --files0-from $W/m" "no-deferral=$D --files0-from $W/m"
warm; echo "== through xargs: 16,384 as it splits them, and runs of 512; 21 rounds"
python3 $R 21 "new-xargs=xargs -0 -a $W/a $N --" "no-up-front-xargs=xargs -0 -a $W/a $U --" \
	"new-x512=xargs -0 -n 512 -a $W/a $N --" "no-up-front-x512=xargs -0 -n 512 -a $W/a $U --"
rm -r "$W"
