#!/bin/sh
# Instructions the report costs a file: callgrind on a tree of 2,000 files of 16 KiB, one hashing
# thread, the summary and the per-file form (run from the repository's top, as root or not).
set -eu
tree=${1:-/tmp/cgtree}
mkdir -p "$tree"
for i in $(seq 1 2000); do [ -e "$tree/f$i" ] || head -c 16384 /dev/urandom > "$tree/f$i"; done
for form in effective-summary effective; do
	valgrind --tool=callgrind --callgrind-out-file="/tmp/cg-$form.out" build/bin/uring_b3sum --no-wisdom \
		--num-threads 1 "--$form" "/tmp/cg-$form.jsonl" -r -- "$tree" > /dev/null 2> "/tmp/cg-$form.err"
	echo "== --$form: $(grep 'I   refs' "/tmp/cg-$form.err")"
	callgrind_annotate --inclusive=yes "/tmp/cg-$form.out" | grep -E '=> .*effective_add|blake3_hasher_update \[' | sort -u
done
