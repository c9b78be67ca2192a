/* SPDX-License-Identifier: MIT */
/* liburing_b3sum_multithread: the article's producer thread and consumer (the loop is in threaded.c). */
#include "ringsum.h"

static const struct variant multithread = {
	.name = "liburing_b3sum_multithread",
	.uses_uring = true,
	.uses_eventfd = true,
	/* The producer thread is not the thread that set the ring up, so it cannot be SINGLE_ISSUER. */
	.setup_flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	.hash_stream = hash_stream_threaded,
};

int main(int argc, char **argv)
{
	return ringsum_main(argc, argv, &multithread);
}
