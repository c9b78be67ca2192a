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
	/* Its file in the page cache is hashed on every core: its instruction count follows the cache. */
	.counted = false,
	.uses_uring = true,
	.uses_eventfd = true,
	.chooses_path = true,
	.falls_back = true,
	/*
	 * configs/cold-gap.toml on a virtio disk, cold 1 GiB, 11 rounds: O_DIRECT into
	 * huge-page buffers, 4M x 8 deep, 0.463 s, 0.95x the fastest plain read; the
	 * earlier buffered 512K x 8 deep 0.646 s (1.33x), O_DIRECT on 4K pages 1.163 s.
	 */
	.block_size = 4u << 20,
	.queue_depth = 8,
	.buffers_per_depth = 2,
	.direct_when_cold = true,
	.huge_pages = true,
	/*
	 * A tree of small files, cold, 7 interleaved rounds: 16,384 x 64 KiB
	 * 0.952 s with O_DIRECT from 4K (0.73x `xargs -P16 -n64 cat`, 4.3x b3sum
	 * via xargs) against 1.818 s buffered below a block, where each cold
	 * buffered read waits on its own readahead; a mixed 1.16 GB tree (1,631
	 * files, log-normal 0 B to 256 MiB) 0.717 s against 0.996 s. 1M x 32 and
	 * 4M x 16 deep were no faster: the depth stays.
	 */
	.tree_direct_min = 4u << 10,
	.hashes_when_behind = true,
	.setup_flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
);
