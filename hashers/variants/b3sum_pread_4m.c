/* SPDX-License-Identifier: MIT */
/* b3sum_pread_4m: the pread() loop in uring_b3sum's blocks, to tell the ring from the block size. */
#include "../ringsum.h"

RINGSUM_VARIANT(hash_stream_pread,
	.summary = "BLAKE3 hashes read with pread() in 4M blocks (huge pages under --direct), as uring_b3sum reads",
	.counted = true,
	.block_size = 4u << 20,
	.huge_pages = true,
);
