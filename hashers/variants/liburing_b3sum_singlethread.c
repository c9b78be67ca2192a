/* SPDX-License-Identifier: MIT */
/* liburing_b3sum_singlethread: one loop that requests, reaps and consumes on one core. */
#include "../ringsum.h"

/*
 * Waiting for a completion is safe while one is in flight. With nothing in
 * flight after a consume, a cell between the heads that is not requested is
 * available and was just hashed, so every cell is consumed: the producer can
 * request, or the stream is done. An iteration with nothing in flight and no
 * progress would contradict that, and is reported rather than spun on.
 */
static int hash_stream(struct ring *r)
{
	int ret, progress;

	while (!ring_consumed_all(r)) {
		progress = ret = ring_request(r);
		if (ret >= 0)
			ret = ring_submit(r, true);
		if (ret >= 0 && ring_in_flight(r) > 0)
			ret = ring_reap_one(r, true);
		while (ret > 0) {
			progress++;
			if (r->cfg->knobs.process_in_inner_loop)
				ring_consume(r);
			ret = ring_reap_one(r, false);
		}
		if (ret < 0)
			return ret;
		progress += ring_consume(r);
		if (!progress && ring_in_flight(r) == 0 && !ring_consumed_all(r))
			return -ERR_STALLED;
	}
	return 0;
}

RINGSUM_VARIANT(hash_stream,
	.summary = "BLAKE3 hashes read through io_uring, in one thread, as in the article",
	.article = ARTICLE_SINGLETHREAD,
	.counted = true,
	.uses_uring = true,
	.waits_on_completions = true,
	.setup_flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN |
		       IORING_SETUP_TASKRUN_FLAG,
);
