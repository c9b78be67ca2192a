#!/bin/sh
# folio-race.sh: a cached 256 MiB file in three page-cache shapes, and uring_b3sum's stagings on each,
# on one core and on both (race.py: interleaved, shuffled rounds; paired ratios to the defaults).
#   4k:  read 4 KiB at a time with readahead off (POSIX_FADV_RANDOM): 4K folios
#   dd:  read by dd bs=16M after a drop: 4K folios for its first 8 MiB, then 16K
#   2m:  written by dd and never dropped: 2M folios, mapped a PMD at a time
# Run from the checkout as root: sh docs/cold-path/prefetch-zen5-run/folio-race.sh > .../folio-race.log
set -e
here=$(dirname "$0"); data=build/data; U=build/bin/uring_b3sum; B=.tools/bin/b3sum; rounds=${ROUNDS:-11}
head -c 256M $data/sweep-1G.bin > $data/pf-4k.bin
cp $data/pf-4k.bin $data/pf-dd.bin
sync; echo 1 > /proc/sys/vm/drop_caches
python3 -c "
import os
fd = os.open('$data/pf-4k.bin', os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for off in range(0, os.fstat(fd).st_size, 4096): os.pread(fd, 4096, off)"
dd if=$data/pf-dd.bin of=/dev/null bs=16M status=none
dd if=$data/pf-4k.bin of=$data/pf-2m.bin bs=64M status=none
for shape in 4k dd 2m; do
	echo "== $shape: $(python3 $here/folios.py $data/pf-$shape.bin 256 | tr ' ' '\n' | grep -c ':256s') of 256 MiB in 4K folios"
	T="taskset -c 1 $U --num-threads 1"
	python3 $here/race.py $rounds $data/pf-$shape.bin "defaults 1core=;$T" "prefetch=;$T --prefetch" \
		"in place=;$T --in-place" "read once=;$T --read-once" "b3sum -t1=;taskset -c 1 $B --num-threads 1"
	python3 $here/race.py $rounds $data/pf-$shape.bin "defaults 2cores=;$U" "prefetch=;$U --prefetch" \
		"in place=;$U --in-place" "read once=;$U --read-once" "b3sum=;$B"
	for i in 1 2 3 4 5; do $U --verbose $data/pf-$shape.bin 2>&1 | grep -o 'staging [a-z-]*, measured here.*faster in [0-9]*' || true; done
done
rm -f $data/pf-4k.bin $data/pf-dd.bin $data/pf-2m.bin
