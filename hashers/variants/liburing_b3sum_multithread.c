/* SPDX-License-Identifier: MIT */
/* liburing_b3sum_multithread: the article's producer thread and consumer (the loop is in loop_threaded.c). */
#include "../ringsum.h"

RINGSUM_VARIANT(hash_stream_threaded,
	.summary = "BLAKE3 hashes read through io_uring by a producer thread, as in the article",
	.article = ARTICLE_MULTITHREAD,
	.parallel = true,
	.counted = true,
	.uses_uring = true,
	.uses_eventfd = true,
	/* The producer thread is not the thread that set the ring up, so it cannot be SINGLE_ISSUER. */
	.setup_flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
);
