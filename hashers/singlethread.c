/* SPDX-License-Identifier: MIT */
/* liburing_b3sum_singlethread: one loop that requests, reaps and consumes on one core. */
#include "ringsum.h"

/*
 * Waiting for a completion is safe: after a consume, a cell between the two
 * heads that is not requested would be available and already hashed, so if
 * nothing is in flight every cell is consumed and the producer either just
 * requested one or the file is done.
 */
static int hash_file(struct ring *r, blake3_hasher *hasher)
{
	int ret;

	while (!ring_consumed_all(r)) {
		ret = ring_request(r);
		if (ret >= 0)
			ret = ring_submit(r, true);
		if (ret >= 0)
			ret = ring_reap_one(r, true);
		while (ret > 0) {
			if (r->process_in_inner_loop)
				ring_consume(r, hasher);
			ret = ring_reap_one(r, false);
		}
		if (ret < 0)
			return ret;
		ring_consume(r, hasher);
	}
	return 0;
}

static const struct variant singlethread = {
	.name = "liburing_b3sum_singlethread",
	.uses_uring = true,
	.waits_on_completions = true,
	.setup_flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN |
		       IORING_SETUP_TASKRUN_FLAG,
	.hash_file = hash_file,
};

int main(int argc, char **argv)
{
	return ringsum_main(argc, argv, &singlethread);
}
