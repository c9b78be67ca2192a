/* SPDX-License-Identifier: MIT */
/*
 * Where the consumer's hashing runs: a block on one core or on every core,
 * and whole small files side by side. Which cells are hashed, and in what
 * order they are released, is ring.c's; nothing here changes a cell's state.
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

void hash_block(struct ring *r, struct cell *c)
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
			hash_parallel(&c->input->hasher, c->buf + done, piece);
			c->input->parallel_bytes += piece;
			r->parallel_bytes += piece;
		} else {
			blake3_hasher_update(&c->input->hasher, c->buf + done, piece);
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
unsigned hash_side_by_side(struct ring *r)
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
	hash_jobs_parallel(r->hash_jobs, files);
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
