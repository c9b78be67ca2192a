/* SPDX-License-Identifier: MIT */
/*
 * The ring's consumer (ring.c has the protocol and the producer): it hashes
 * the available cells in order, each block on one core or on every core, and
 * whole small files side by side, and releases the cells to the producer. Its
 * hashing state (hashed_ahead, hash_jobs, parallel_bytes) is set up and reset
 * with the ring (ring_setup.c, ring_start()) and changed only here.
 */
#include <stdlib.h>
#include <string.h>

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
 * A cached file hashed from memory is a whole file in one cell too. Split
 * across the cores, each file pays a fork and a join, and the cores wait
 * while the consumer alone maps and unmaps it; up to MAPPED_SIDE_MAX, files
 * side by side, one a core, in place, took 0.87-0.93 of that time on the Zen
 * 5's two cores, on cached trees of 1M, 2M and 4M files, and over it 8M files
 * gained nothing (docs/cold-path/mapped-side-zen5-run).
 */
#define MAPPED_SIDE_MAX (4u << 20)

static bool whole_mapped_file(const struct cell *c)
{
	return c->input->from_memory && !c->file_failed && c->input->size && c->input->size <= MAPPED_SIDE_MAX;
}

/* The mapped files among the run's first cells unmapped; lost: each to be hashed again, alone, at its finish. */
static void unmap_side(struct ring *r, unsigned cells, bool lost)
{
	for (unsigned i = 0; i < cells; i++) {
		struct input *in = cell_of(r, r->consumer_head + i)->input;

		if (!in->mapping)
			continue;
		input_unmap(in);
		in->hashed_beside = !lost;
		if (lost)
			in->hasher = r->base_hasher;
	}
}

/*
 * Small files side by side keep the cores busy when the hashing is behind
 * the reads, and cost when it is not: the helpers take the producer's core
 * while it opens and copies file after file. On two cores the cached 16,384
 * x 64 KiB tree one by one took 1.00 of side by side's time on the Zen 5 with
 * AVX-512, 1.18 with AVX2, 0.97 [0.88, 1.12] on the Zen 3 (AVX2; --serial-hash,
 * docs/cold-path/side-pool-zen5, forced-zen3.log; TBB's: mapped-side-zen5-run),
 * and the time the hashing waited for the reads did not tell them apart.
 * So uring_b3sum measures it: periods of SIDE_PERIOD_FILES small files one
 * by one and side by side in turn, in pairs whose order turns each pair, and
 * the median pair's faster way takes the rest.
 *
 * A run of a few small files never wins back a trial, so the first
 * side_trial_after bytes go one by one; then the helpers start (side_pool.c)
 * and the trial begins. With TBB that made 2 to 128 cached files of 64 KiB
 * take 0.45-0.84 of the time (docs/cold-path/side-load-zen5); with the
 * helpers, near a tie: 32 named took 0.95 of the time, 128 named 1.03, a
 * list of 512 0.99 (docs/cold-path/side-pool-zen5/rules.log).
 */
#define SIDE_PERIOD_FILES 64

/* uring_b3sum's, unless a hashing is given */
static bool side_trial_applies(const struct ring *r)
{
	return r->cfg->adapts_window && r->cfg->hashing == HASH_WHEN_BEHIND;
}

/*
 * Before the producer's thread: more than SIDE_TRIAL_FILES files named (a run
 * of xargs), the helpers start now and the trial with the first file, as the
 * run is likely to pass side_trial_after anyway: xargs's runs of 2,047 and
 * of 512 files took 0.96 and 0.97 of the time they took with the helpers
 * started after 8 MiB (docs/cold-path/side-pool-zen5/rules.log).
 */
void ring_side_trial_start(struct ring *r, int named_files)
{
	struct side_trial *t = &r->side_trial;

	memset(t, 0, sizeof(*t));
	t->measured = side_trial_applies(r);
	if (t->measured && named_files > SIDE_TRIAL_FILES) {
		side_pool_start(&r->side_pool, side_threads(r));
		t->helpers_asked = true;
	}
	t->side = !t->measured || t->helpers_asked;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A small file of the ring hashed, before its cell is released: the period's count and, at its end, the pair's. */
static void side_trial_tick(struct ring *r, uint64_t bytes)
{
	struct side_trial *t = &r->side_trial;
	uint64_t now;
	double sorted[SIDE_TRIAL_PAIRS];

	if (!t->measured)
		return;
	if (!t->helpers_asked) {
		t->bytes_before += bytes;
		if (t->bytes_before >= r->cfg->side_trial_after) {
			t->helpers_asked = true;
			side_pool_start(&r->side_pool, side_threads(r));	/* before the first period */
		}
		return;
	}
	now = ring_clock_ns();
	if (!t->periods && !t->files)
		t->side = true;	/* the first period */
	if (!t->files++)
		t->start_ns = now;
	if (t->files <= SIDE_PERIOD_FILES)
		return;
	t->ns[t->side] = now - t->start_ns;
	t->files = 1;
	t->start_ns = now;
	if (++t->periods % 2 == 0) {
		t->ratios[t->periods / 2 - 1] = (double)t->ns[1] / t->ns[0];
		if (t->periods == 2 * SIDE_TRIAL_PAIRS) {
			memcpy(sorted, t->ratios, sizeof(sorted));
			qsort(sorted, SIDE_TRIAL_PAIRS, sizeof(sorted[0]), compare_doubles);
			t->ratio = (sorted[SIDE_TRIAL_PAIRS / 2 - 1] + sorted[SIDE_TRIAL_PAIRS / 2]) / 2;
			t->side = t->ratio < 1;
			t->measured = false;
			return;
		}
		return;		/* the next pair begins the way this one ended: its order turned */
	}
	t->side = !t->side;
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
 * order as it does any cell. Small mapped files join the run, each mapped
 * here and hashed in place (input.c finishes them). Returns how many cells
 * from the head it hashed (0: none, hash_block() goes on as before).
 */
static unsigned hash_side_by_side(struct ring *r)
{
	unsigned run = 0, files = 0, mapped = 0;
	bool lost;

	if (r->cfg->hashing == HASH_SERIAL || r->cfg->hash_threads < 2)
		return 0;
	while (run < r->cfg->nr_cells) {
		struct cell *c = cell_of(r, r->consumer_head + run);

		if (cell_state(c) != CELL_AVAILABLE ||
		    !((whole_small_file(c) && r->side_trial.side) || whole_mapped_file(c)))
			break;
		files += (!c->file_failed && c->want) || whole_mapped_file(c);
		run++;
	}
	/* empty and failed files are available at once, and one file alone has the cores to itself */
	if (files < 2)
		return 0;
	files = 0;
	for (unsigned i = 0; i < run; i++) {
		struct cell *c = cell_of(r, r->consumer_head + i);

		if (whole_mapped_file(c)) {
			if (input_map(c->input) < 0) {	/* it goes its usual way, and so do the files after it */
				run = i;
				break;
			}
			r->hash_jobs[files++] = (struct hash_job){ &c->input->hasher, c->input->mapping, c->input->size };
			mapped++;
		} else if (!c->file_failed && c->want) {
			r->hash_jobs[files++] = (struct hash_job){ &c->input->hasher, c->buf, c->want };
			fault_lag_small(true);
		}
	}
	if (files < 2) {
		unmap_side(r, run, true);
		return 0;
	}
	for (unsigned i = 0; i < files; i++)
		fault_lag_hash();
	if (mapped)
		input_guard_mappings();
	side_pool_start(&r->side_pool, side_threads(r));
	side_pool_hash(&r->side_pool, r->hash_jobs, files);
	lost = mapped && input_unguard_mappings();
	unmap_side(r, run, lost);
	for (unsigned i = 0; i < run; i++) {
		struct cell *c = cell_of(r, r->consumer_head + i);

		if (c->file_failed || c->input->from_memory)
			continue;
		c->input->ring_bytes += c->want;
		c->input->parallel_bytes += c->want;
		r->parallel_bytes += c->want;
	}
	return run;
}

/*
 * The window: how many blocks the reads may run ahead of the hashing. Reads
 * ahead of a hashing that is behind only wait in their buffers, and 16
 * buffers of 4 MiB outgrow a last-level cache: a fast device's copy then
 * writes them out to memory and the hashing reads them back. So the producer
 * requests only while the bytes between the heads are under the window, and
 * gives each request the buffer freed last (ring.c): the blocks in flight and
 * waiting stay in the few buffers the cache holds.
 *
 * uring_b3sum measures which window. It starts at WINDOW_SMALL bytes, and
 * every WINDOW_PERIOD blocks looks at the share of the time the consumer
 * waited for a read. Over two thirds of the first period, or over
 * half of two in a row, the reads are behind and the depth may help them:
 * every buffer, to the end.
 * On a Zen 5's RAM-backed loop device and 2 cores, the window took 0.79 of
 * the time every buffer took; on its virtio disk, where 4 buffers took 1.15
 * of 16's, the hashing waited 72-73% of the first period at 3 blocks and had
 * every buffer from block 11 on (docs/cold-path/ram-window-zen5-run).
 */
#define WINDOW_SMALL (12u << 20)
#define WINDOW_PERIOD 8
#define WINDOW_BEHIND (1.0 / 2)
#define WINDOW_BEHIND_PERIODS 2
#define WINDOW_FIRST_BEHIND (2.0 / 3)

static void window_set(struct ring *r, unsigned blocks)
{
	r->window.blocks = blocks;
	atomic_store(&r->request_limit, blocks >= r->cfg->nr_cells ? UINT64_MAX :
			 r->released_bytes + (uint64_t)blocks * r->cfg->knobs.block_size);
}

static unsigned window_small(const struct ring *r)
{
	unsigned blocks = WINDOW_SMALL / r->cfg->knobs.block_size;

	return blocks < 2 ? 2 : blocks;
}

void ring_window_start(struct ring *r)
{
	unsigned fixed = r->cfg->knobs.window, every = r->cfg->nr_cells;

	memset(&r->window, 0, sizeof(r->window));
	r->window.measured = r->cfg->adapts_window && !fixed && window_small(r) < every;
	if (r->window.measured)
		window_set(r, window_small(r));
	else
		window_set(r, fixed && fixed < every ? fixed : every);
}

static void window_look(struct ring *r)
{
	struct window *w = &r->window;
	uint64_t now = ring_clock_ns();
	double waited = (double)w->waited_ns / (double)(now - w->period_start_ns + 1);

	w->periods++;
	w->behind_periods = waited > WINDOW_BEHIND ? w->behind_periods + 1 : 0;
	if (waited > w->most_waited)
		w->most_waited = waited;
	if (w->behind_periods == WINDOW_BEHIND_PERIODS || (w->periods == 1 && waited > WINDOW_FIRST_BEHIND)) {
		w->grown_waited = waited;
		w->grown_at = r->consumer_head + 1;
		w->grown_first = w->periods == 1;
		w->measured = false;
		window_set(r, r->cfg->nr_cells);
		atomic_store(&r->reads_behind, true);
	}
	w->period_blocks = 0;
	w->waited_ns = 0;
	w->period_start_ns = now;
}

/*
 * A cell released: its bytes leave the window, which moves on (and, measured,
 * may grow). Its charge is read before the release: after it, the producer
 * may take the cell for another block.
 */
static void window_release(struct ring *r, size_t charge)
{
	struct window *w = &r->window;

	r->released_bytes += charge;
	/* The first period begins once the first window is hashed: requested at once, it says nothing. */
	if (w->measured && !w->period_start_ns && r->consumer_head + 1 >= w->blocks) {
		w->period_start_ns = ring_clock_ns();
		w->waited_ns = 0;
	} else if (w->measured && w->period_start_ns && ++w->period_blocks == WINDOW_PERIOD) {
		window_look(r);
	}
	window_set(r, w->blocks);
}

/* --verbose, at the end: what the window did. */
void ring_say_window(const struct ring *r)
{
	const struct window *w = &r->window;
	unsigned small = window_small(r), every = atomic_load(&r->cells_limit);
	unsigned small_mib = (unsigned)((size_t)small * r->cfg->knobs.block_size >> 20);

	if (!r->cfg->adapts_window || r->cfg->knobs.window || !r->have_uring || !r->bytes_hashed)
		return;
	if (small >= r->cfg->nr_cells)
		fprintf(stderr, "%s: window every buffer (%u): no fewer would hold %uM\n", r->cfg->prog,
			every, WINDOW_SMALL >> 20);
	else if (!w->periods)
		fprintf(stderr, "%s: window %u blocks (%uM): under %u blocks through the ring, too few to "
			"measure the reads\n", r->cfg->prog, small, small_mib, small + WINDOW_PERIOD);
	else if (w->grown_at)
		fprintf(stderr, "%s: window every buffer (%u) from block %llu on: the hashing waited for the reads "
			"%.0f%% of the time at %u blocks (over %s: they were behind)\n", r->cfg->prog, every,
			(unsigned long long)w->grown_at, 100 * w->grown_waited, small,
			w->grown_first ? "2/3 of the first period" : "1/2 twice in a row");
	else
		fprintf(stderr, "%s: window %u blocks (%uM): the hashing waited for the reads at most %.0f%% of the "
			"time in %u periods of %u blocks (never over 1/2 twice in a row: they kept ahead)\n", r->cfg->prog,
			small, small_mib, 100 * w->most_waited, w->periods, WINDOW_PERIOD);
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
	size_t charge;

	while (blocks < r->cfg->nr_cells && !ring_consumed_all(r)) {
		struct cell *c = cell_of(r, r->consumer_head);
		bool small;

		if (cell_state(c) != CELL_AVAILABLE)
			break;
		small = c->want && whole_small_file(c) && !c->file_failed;
		/* cells the side-by-side pass hashed already are only walked over */
		if (!r->hashed_ahead)
			r->hashed_ahead = hash_side_by_side(r);
		if (r->hashed_ahead) {
			r->hashed_ahead--;
		} else if (!c->file_failed) {
			if (small)
				fault_lag_small(false);
			hash_block(r, c);
		}
		r->bytes_hashed += c->want;
		if (small)
			side_trial_tick(r, c->want);
		if (c->last)
			input_finish(r, c->input);
		progress_tick(r);
		charge = c->charge;
		atomic_store(&c->state, CELL_CONSUMED);
		window_release(r, charge);
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

/* --verbose, at the end: which way the small files went, and why. */
void ring_say_side_trial(const struct ring *r)
{
	const struct side_trial *t = &r->side_trial;

	if (!side_trial_applies(r))
		return;
	if (!t->helpers_asked) {
		if (t->bytes_before)
			fprintf(stderr, "%s: small files one by one: %llu KiB of them, side by side is tried after %llu KiB\n",
				r->cfg->prog, (unsigned long long)((t->bytes_before + 1023) >> 10),
				(unsigned long long)(r->cfg->side_trial_after >> 10));
		return;
	}
	if (!t->periods)
		return;
	if (t->measured)
		fprintf(stderr, "%s: small files side by side: too few to measure (%u periods of %u)\n", r->cfg->prog,
			t->periods, 2 * SIDE_TRIAL_PAIRS);
	else
		fprintf(stderr, "%s: small files %s, measured here: side by side / one by one %.3f, the median of %u "
			"pairs of periods of %u files\n", r->cfg->prog, t->side ? "side by side" : "one by one", t->ratio,
			SIDE_TRIAL_PAIRS, SIDE_PERIOD_FILES);
}
