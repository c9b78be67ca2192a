/* SPDX-License-Identifier: MIT */
/*
 * The producer's queue depth (ring.c asks here before each request): the
 * queue depth's reads at most, and for uring_b3sum, once, more.
 */
#include "ringsum.h"

/* Every read allowed is out: as many as the depth, or, deepened, the first depth's blocks in bytes. */
bool ring_depth_full(struct ring *r)
{
	if (ring_in_flight(r) >= atomic_load_explicit(&r->depth_limit, memory_order_relaxed))
		return true;
	/* deeper, in requests, but no more bytes in flight than before: a file's big blocks keep their depth */
	return r->deepened_at && r->flight_bytes >= (uint64_t)r->cfg->knobs.queue_depth * r->cfg->knobs.block_size;
}

/*
 * uring_b3sum's queue depth grows once, with the buffers in use: when the
 * hashing waits for the reads (the window grew, ring_consume.c) and the
 * producer, again and again, has every read it may have out, all submitted,
 * O_DIRECT and none finished, about to sleep. Then the device is the wait
 * (a buffered read can be a copy on an io-wq thread, as tmpfs's are), and
 * more reads at once may shorten it: 32 in flight and 32 buffers, not 8 and 16,
 * took 0.84-0.89 of the time on the Zen 5's cold tree of 64 KiB files, where
 * the Zen 3's disk gained nothing (docs/cold-path/tree-depth-zen5). The
 * bytes in flight stay at most the first depth's blocks: a big file's 4M
 * reads, 32 at once, were 1.3% slower there. A cached file's reads finish as
 * they are submitted: its depth stays. hashers/model/ring.pml checks the
 * growth (DEEPENS) at any point the producer would sleep.
 */
#define DEPTH_WAITS 8

bool ring_deepen(struct ring *r)
{
	if (!r->cfg->depth_grows || r->deepened_at || !r->last_read_direct || !atomic_load(&r->reads_behind) ||
	    ring_in_flight(r) < atomic_load_explicit(&r->depth_limit, memory_order_relaxed) ||
	    io_uring_sq_ready(&r->uring) || ++r->depth_waits < DEPTH_WAITS)
		return false;
	r->deepened_at = r->producer_head;
	atomic_store(&r->depth_limit, r->cfg->nr_cells);
	atomic_store(&r->cells_limit, r->cfg->nr_cells);
	return true;
}

/* --verbose, at the end: whether the depth grew. */
void ring_say_depth(const struct ring *r)
{
	if (!r->cfg->depth_grows || !r->have_uring || !r->bytes_hashed || !atomic_load(&r->reads_behind))
		return;
	if (r->deepened_at)
		fprintf(stderr, "%s: up to %u reads in flight (no more bytes than %u blocks) and %u buffers from block "
			"%llu on (%u and %u before): the hashing waited for the reads, and they for the device: every "
			"one out, O_DIRECT, none finished\n", r->cfg->prog, r->cfg->nr_cells, r->cfg->knobs.queue_depth,
			r->cfg->nr_cells, (unsigned long long)r->deepened_at + 1, r->cfg->knobs.queue_depth,
			r->cfg->first_cells);
	else
		fprintf(stderr, "%s: %u reads in flight at most, %u buffers: the reads were behind, but never all out, "
			"O_DIRECT and unfinished at once\n", r->cfg->prog, r->cfg->knobs.queue_depth, r->cfg->first_cells);
}

