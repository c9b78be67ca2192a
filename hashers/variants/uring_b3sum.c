/* SPDX-License-Identifier: MIT */
/*
 * uring_b3sum: the hasher to use. Output and --check as b3sum's; many files
 * pipelined through one ring; a file already in the page cache is hashed from
 * memory on every core, any other is read through io_uring while it is hashed.
 * Where io_uring is forbidden or absent it reads with pread() instead.
 */
#include "../ringsum.h"

RINGSUM_VARIANT(hash_stream_threaded,
	.summary = "print BLAKE3 hashes of files read through io_uring, as b3sum does",
	.positional_flag = true,
	.defaults_file = "uring_b3sum.options",
	/* Counted on one thread (ringsum passes --num-threads 1): on every core its count would follow TBB's stealing. */
	.counted = true,
	.uses_uring = true,
	.uses_eventfd = true,
	.chooses_path = true,
	.falls_back = true,
	/*
	 * configs/cold-gap.toml on a virtio disk, cold 1 GiB: O_DIRECT into
	 * huge-page buffers, 4M x 8 deep, came level with the fastest plain read,
	 * ahead of the earlier buffered 512K x 8 deep and of O_DIRECT on 4K pages
	 * (docs/cold-path.md). The ledger's cold file rows (docs/ledger.md): within
	 * 2% of its other shapes on both machines' disks but one row, 6% behind 8
	 * buffers on the Emerald Rapids' RAM device; no shape is within 2% on all.
	 * 16 deep's 1-7% on the Zen 3's RAM device was noise: 1.002 of this over
	 * 123 rounds, beside a copy of it (docs/cold-path/ram-aa-zen3).
	 */
	.block_size = 4u << 20,
	.queue_depth = 8,
	.buffers_per_depth = 2,
	.direct_when_cold = true,
	.huge_pages = true,
	/*
	 * A tree of small files, cold: O_DIRECT from 4K is faster than buffered
	 * reads below a block, where each cold buffered read waits on its own
	 * readahead, on 64 KiB files and on a mixed tree alike (docs/trees.md,
	 * docs/cold-path/list-run). 1M x 32 and 4M x 16 deep were no faster on the
	 * Zen 3's disk; 32 deep was on the Zen 5's, so the depth grows where the
	 * device is the wait (ring_depth.c).
	 */
	.tree_direct_min = 4u << 10,
	.hashes_when_behind = true,
	/*
	 * At most 12M read ahead until the hashing waits for the reads
	 * (ring_consume.c): the RAM device on the Zen 5 in 0.79 of the time, its
	 * disk unchanged (docs/cold-path/ram-window-zen5-run).
	 */
	.adapts_window = true,
	/*
	 * Waiting for a cell the producer is busy making (the next small file,
	 * cached) costs less spun than slept: ring_wake.c.
	 */
	.consumer_spins = true,
	.setup_flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
);
