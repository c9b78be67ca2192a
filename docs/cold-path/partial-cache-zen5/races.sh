#!/bin/sh
# races.sh OLD NEW: the races of this directory's README, from the checkout, as root, nothing else running.
# OLD: uring_b3sum built from 22ac064 (the whole file O_DIRECT under 3/4 cached); NEW: the commit after.
set -e
here=$(dirname "$0"); F=build/data/sweep-1G.bin; OLD=$1; NEW=$2
race() { python3 $here/partrace.py 11 $F "$@" "old=$OLD" "new=$NEW" "old-buffered=$OLD --path ring --buffered"; }
race 0.1,0.25,0.5,0.7 dd
race 0.25,0.5 random
race 0.1,0.5 prefix
python3 docs/cold-path/ram-window-zen5-run/coldrace.py 15 $F "old=;$OLD" "new=;$NEW" | tail -3
python3 docs/cold-path/ram-window-zen5-run/coldrace.py 11 build/data/ringsum-tree-64K-57049d1613 "old=;$OLD -r" "new=;$NEW -r" | tail -3
