#!/bin/sh
# startup.sh REPO OUT [OLD]: what one invocation on a 4 KiB cached file costs, and what linking costs
# (programs that do nothing, linked as uring_b3sum was). hyperfine, 500 runs each, one at a time;
# OLD: another uring_b3sum to time beside REPO's.
set -eu
repo=$1 out=$2 old=${3:-}
mkdir -p "$out" && cd "$out"
head -c 4096 /dev/urandom > small4k
echo 'int main(void){return 0;}' > nop.c
printf '%s\n' '#include <oneapi/tbb/task_arena.h>' \
	'int main(){ return oneapi::tbb::this_task_arena::max_concurrency() > 100; }' > tbbinit.cpp
gcc -O2 nop.c -o nop_plain
gcc -O2 nop.c -o nop_uring -Wl,--no-as-needed -luring -pthread
gcc -O2 nop.c -o nop_stdcxx -Wl,--no-as-needed -luring -lstdc++ -pthread
gcc -O2 nop.c -o nop_libs -Wl,--no-as-needed -luring -ltbb -lstdc++ -pthread
g++ -O2 tbbinit.cpp -o tbbinit -ltbb
hyperfine -N -w 30 -r 500 --export-json startup.json \
	"$repo/build/bin/uring_b3sum small4k" ${old:+"$old small4k"} "$repo/.tools/bin/b3sum small4k" \
	./nop_plain ./nop_uring ./nop_stdcxx ./nop_libs ./tbbinit
