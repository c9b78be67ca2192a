/* SPDX-License-Identifier: MIT */
/* b3sum_pread: a plain pread() loop with the same knobs and output, to isolate what io_uring adds. */
#include "../ringsum.h"

RINGSUM_VARIANT(hash_stream_pread,
	.summary = "BLAKE3 hashes read with pread(), the baseline of the io_uring hashers",
	.counted = true,
);
