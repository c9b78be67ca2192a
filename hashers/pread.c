/* SPDX-License-Identifier: MIT */
/* b3sum_pread: a plain pread() loop with the same knobs and output, to isolate what io_uring adds. */
#include "ringsum.h"

static const struct variant pread_loop = {
	.name = "b3sum_pread",
	.hash_stream = hash_stream_pread,
};

int main(int argc, char **argv)
{
	return ringsum_main(argc, argv, &pread_loop);
}
