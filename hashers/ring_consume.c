/* SPDX-License-Identifier: MIT */
/*
 * The ring's consumer (ring.c has the protocol and the producer): it hashes
 * the available cells in order, each block on one core or on every core, and
 * whole small files side by side, and releases the cells to the producer. Its
 * hashing state (hashed_ahead, hash_jobs, parallel_bytes) is set up and reset
 * with the ring (ring_setup.c, ring_start()) and changed only here.
 */
#include "faults.h"

/*
 * One core can hash slower than a fast disk reads (BLAKE3 with AVX2 on a Zen 3
 * core against a virtio disk: docs/cold-path.md, from its kept runs). Once
 * the block after this one is read already, the reads are ahead, and the rest
 * of this block is hashed on every core; while they are behind, one core
 * keeps up and the others are left to them. The next block is looked for
 * before each piece, so that a block begun on one core does not finish there
 * when the reads overtake it. A block below PARALLEL_HASH_MIN is not worth
 * the fork.
 */
#define PARALLEL_HASH_MIN (256u << 10)
#define SERIAL_PIECE (512u << 10)

static void hash_block(struct ring *r, struct cell *c)
{
	struct cell *next = cell_of(r, r->consumer_head + 1);
	bool adapts = r->cfg->hashing == HASH_WHEN_BEHIND && c->want >= PARALLEL_HASH_MIN;
	bool parallel = r->cfg->hashing == HASH_PARALLEL;
	size_t done = 0, piece, left;

	fault_lag_hash();
	while (done < c->want) {
		if (adapts && !parallel && cell_state(next) == CELL_AVAILABLE)
			parallel = true;
		left = c->want - done;
		piece = parallel || !adapts || left < SERIAL_PIECE ? left : SERIAL_PIECE;
		if (parallel) {
			hash_parallel(&c->input->hasher, c->buf + done, piece, r->cfg->ring_staging);
			c->input->parallel_bytes += piece;
			r->parallel_bytes += piece;
		} else {
			hash_serial(&c->input->hasher, c->buf + done, piece, r->cfg->ring_staging);
		}
		done += piece;
	}
	c->input->ring_bytes += c->want;
}

/* A whole file in one cell, too small to split: it can be hashed beside the others. */
static bool whole_small_file(const struct cell *c)
{
	return c->offset == 0 && c->last && c->want < PARALLEL_HASH_MIN && !c->input->stream;
}

/*
 * Many small files: each is a single block below PARALLEL_HASH_MIN, so
 * hash_block() keeps every one on the consumer's core, one after another,
 * while the other cores wait (16,384 cached 64 KiB files: docs/trees.md).
 * When the cell after the consumer head's is available too, the reads are
 * ahead, as hash_block() judges it: the run of available cells from the head
 * on that each hold a whole small file is hashed side by side, the files
 * shared among the cores. Each file has its own hasher and its one block, so
 * the order across files does not matter; the consumer then finishes them in
 * order as it does any cell. Returns how many cells from the head it hashed
 * (0: none, hash_block() goes on as before).
 */
static unsigned hash_side_by_side(struct ring *r)
{
	unsigned run = 0, files = 0;

	if (r->cfg->hashing == HASH_SERIAL || r->cfg->hash_threads < 2)
		return 0;
	while (run < r->cfg->nr_cells) {
		struct cell *c = cell_of(r, r->consumer_head + run);

		if (cell_state(c) != CELL_AVAILABLE || !whole_small_file(c))
			break;
		if (!c->file_failed && c->want)
			r->hash_jobs[files++] = (struct hash_job){ &c->input->hasher, c->buf, c->want };
		run++;
	}
	/* empty, failed and mapped files are available at once: they say nothing of the reads */
	if (files < 2)
		return 0;
	for (unsigned i = 0; i < files; i++)
		fault_lag_hash();
	hash_jobs_parallel(r->hash_jobs, files, r->cfg->ring_staging);
	for (unsigned i = 0; i < run; i++) {
		struct cell *c = cell_of(r, r->consumer_head + i);

		if (c->file_failed)
			continue;
		c->input->ring_bytes += c->want;
		c->input->parallel_bytes += c->want;
		r->parallel_bytes += c->want;
	}
	return run;
}

/*
 * One consumer run hashes the available cells in order, at most one lap of
 * the ring, so that a consumer the producer keeps feeding still leaves a trace
 * row per lap. Completions are counted at the end of the run, so every one
 * lands in some row. A file's last block finishes the file.
 */
unsigned ring_consume(struct ring *r)
{
	unsigned in_flight = ring_in_flight(r);
	unsigned blocks = 0;

	while (blocks < r->cfg->nr_cells && !ring_consumed_all(r)) {
		struct cell *c = cell_of(r, r->consumer_head);

		if (cell_state(c) != CELL_AVAILABLE)
			break;
		/* cells the side-by-side pass hashed already are only walked over */
		if (!r->hashed_ahead)
			r->hashed_ahead = hash_side_by_side(r);
		if (r->hashed_ahead)
			r->hashed_ahead--;
		else if (!c->file_failed)
			hash_block(r, c);
		r->bytes_hashed += c->want;
		if (c->last)
			input_finish(r, c->input);
		progress_tick(r);
		atomic_store(&c->state, CELL_CONSUMED);
		ring_wake_producer(r);
		r->consumer_head++;
		blocks++;
	}
	if (trace_on(&r->trace))
		trace_consumer_run(&r->trace, in_flight,
				   atomic_exchange_explicit(&r->reaped, 0, memory_order_relaxed),
				   blocks, r->bytes_hashed,
				   atomic_exchange_explicit(&r->in_flight_peak, ring_in_flight(r),
							    memory_order_relaxed));
	return blocks;
}
