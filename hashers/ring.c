/* SPDX-License-Identifier: MIT */
/*
 * The ring buffer protocol shared by every io_uring hasher, and its producer.
 *
 * The blocks of the files, file after file, pass through a ring of cells:
 * the b-th block requested goes to cell b % nr_cells. A cell is consumed
 * (free), requested (read in flight) or available (read, waiting to be
 * hashed). The producer head turns consumed cells into requested ones, in
 * order, while fewer than queue_depth requests are unfinished; completions
 * turn requested cells into available ones, in any order; the consumer head
 * hashes available cells in order and turns them back into consumed ones
 * (cells of whole small files may be hashed side by side before the head
 * walks over them, still available). The consumer, and the hashing it does,
 * is ring_consume.c's; it wakes the producer through ring_wake.c, and nothing
 * here calls it.
 * Each head only ever moves forward, and the producer head never passes a
 * cell the consumer has not released, so every block is hashed exactly once,
 * in order. Buffers are apart from cells: each request gets the buffer freed
 * last, taken back by the producer from the released cells in order, and the
 * window (ring_consume.c) bounds the bytes between the heads. A block with
 * nothing to read (an empty or failed file) is available as soon as it is
 * requested, so every file reaches the consumer.
 */
#include <errno.h>
#include <sched.h>
#include <sys/eventfd.h>

#include "faults.h"

/* A request that keeps failing transiently this often without progress is an error, not a hang. */
#define MAX_RETRIES 1000

/* The producer opens each file; the buffers then follow what it chose (opened: past every check of the open). */
void ring_open_input(struct ring *r, struct input *in, unsigned index)
{
	input_open(r, in, index);
	if ((in->direct || in->mixed) && in->opened)
		ring_use_huge_pages(r);
}

void ring_start(struct ring *r, struct source *source)
{
	r->source = source;
	atomic_store(&r->nr_inputs, 0);
	atomic_store(&r->source_done, false);
	atomic_store(&r->open_files, 0);
	r->max_open_files = open_files_allowed();
	r->producer_input = 0;
	r->producer_block = 0;
	r->producer_head = 0;
	r->consumer_head = 0;
	r->hashed_ahead = 0;
	r->nr_free_buffers = r->cfg->nr_cells;
	for (unsigned i = 0; i < r->cfg->nr_cells; i++)
		r->free_buffers[i] = r->cfg->nr_cells - 1 - i;
	r->reclaim_head = 0;
	r->requested_bytes = r->released_bytes = 0;
	atomic_store(&r->request_limit, UINT64_MAX);	/* main.c starts the window (ring_consume.c) */
	atomic_store(&r->reads_behind, false);
	atomic_store(&r->depth_limit, r->cfg->knobs.queue_depth);
	atomic_store(&r->cells_limit, r->cfg->first_cells);
	r->depth_waits = 0;
	r->deepened_at = 0;
	r->last_read_direct = false;
	r->flight_bytes = 0;
	r->consumer_input = 0;
	r->failed_inputs = 0;
	r->bytes_hashed = 0;
	r->last_sqe = NULL;
	atomic_store(&r->in_flight, 0);
	atomic_store(&r->reaped, 0);
	atomic_store(&r->error, 0);
	for (unsigned i = 0; i < r->cfg->nr_cells; i++)
		atomic_store(&r->cells[i].state, CELL_CONSUMED);
}

/*
 * The producer sleeps when it can neither request nor reap (the consumer's
 * sleep is ring_wake.c's). The sleeping flag is stored before the condition
 * is checked again, and the other side changes the condition before it loads
 * the flag (all seq_cst): one of the two always sees the other, so no wake-up
 * is lost.
 */
void ring_producer_sleep(struct ring *r)
{
	eventfd_t ignored;

	atomic_store(&r->producer_sleeping, true);
	if (!io_uring_cq_ready(&r->uring) && !ring_can_request(r) && !ring_deepen(r) && !atomic_load(&r->error) &&
	    !(ring_produced_all(r) && ring_in_flight(r) == 0))
		eventfd_read(r->eventfd, &ignored);
	atomic_store(&r->producer_sleeping, false);
}

/* --- producer: request --- */

/*
 * Only the producer writes it; the consumer reads it for the trace. The peak
 * is what the queue depth did: the count at a consumer run alone says 0 when
 * every read completed before the consumer looked, as under load it may.
 */
static void set_in_flight(struct ring *r, unsigned in_flight)
{
	unsigned peak = atomic_load_explicit(&r->in_flight_peak, memory_order_relaxed);

	atomic_store_explicit(&r->in_flight, in_flight, memory_order_relaxed);
	while (in_flight > peak &&
	       !atomic_compare_exchange_weak_explicit(&r->in_flight_peak, &peak, in_flight,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/*
 * The producer writes a file's error until its last block is available; the
 * consumer, hashing an earlier block meanwhile, reads the cell's copy, made
 * before the release below.
 */
static void make_available(struct ring *r, struct cell *c)
{
	if (atomic_load_explicit(&c->state, memory_order_relaxed) == CELL_REQUESTED)
		r->flight_bytes -= c->charge;
	c->file_failed = c->input->error != 0;
	atomic_store(&c->state, CELL_AVAILABLE);
	ring_wake_consumer(r);
}

/*
 * The SQ holds queue_depth entries, but with SQPOLL a read can complete and be
 * reaped before the kernel thread moves the SQ head past it: then the SQ can
 * look full with fewer requests in flight, and we wait for the thread.
 */
static struct io_uring_sqe *get_sqe(struct ring *r)
{
	struct io_uring_sqe *sqe;
	int tries = 0;

	while (!(sqe = io_uring_get_sqe(&r->uring)) && ++tries < MAX_RETRIES) {
		if (ring_submit(r, false) < 0 || io_uring_sqring_wait(&r->uring) < 0)
			return NULL;
	}
	return sqe;
}

/*
 * A file's last block asks for at least a byte past the size seen at open
 * (to the next 4 KiB, which O_DIRECT needs anyway) when the buffer has room: a
 * read that stops at the size found the end of the file there, and input.c
 * need not probe past it (one system call a file, which a tree of small files
 * pays thousands of times). No more than that: an O_DIRECT read of a whole
 * 4 MiB buffer for a 64 KiB file cost several times the time of the read.
 */
static size_t past_size(const struct cell *c)
{
	return (c->want + DIRECT_ALIGN) & ~(size_t)(DIRECT_ALIGN - 1);
}

/* Not in an IOSQE_IO_LINK chain: a short read fails the link and cancels the reads after it. */
static bool reads_past_size(const struct ring *r, const struct cell *c)
{
	return c->last && !c->input->stream && !r->cfg->knobs.link && past_size(c) <= r->cfg->knobs.block_size;
}

/* Queue a read of what the cell still lacks; with O_DIRECT it stays aligned. */
static int queue_read(struct ring *r, struct cell *c)
{
	int fd = r->cfg->knobs.fixed_file ? (int)c->input->fixed_slot : c->direct && c->input->mixed ? c->input->direct_fd
											       : c->input->fd;
	struct io_uring_sqe *sqe = fault_lag_device(&r->uring) < 0 ? NULL : get_sqe(r);
	size_t start = c->got, end = reads_past_size(r, c) ? past_size(c) : c->want;
	/* A stream is read where it stands (offset -1), one read at a time. */
	uint64_t offset = c->input->stream ? (uint64_t)-1 : c->offset + start;

	if (!sqe)
		return -EBUSY;
	fault_lag_read();
	if (c->direct) {
		start &= ~(size_t)(DIRECT_ALIGN - 1);
		end = (end + DIRECT_ALIGN - 1) & ~(size_t)(DIRECT_ALIGN - 1);
		c->got = start;
		offset = c->offset + start;
	}
	if (r->cfg->knobs.fixed_buffers)
		io_uring_prep_read_fixed(sqe, fd, c->buf + start, end - start, offset, c->buf_index);
	else
		io_uring_prep_read(sqe, fd, c->buf + start, end - start, offset);
	io_uring_sqe_set_data(sqe, c);
	r->last_read_direct = c->direct;
	sqe->rw_flags = c->input->rw_flags;
	sqe->flags |= r->cfg->sqe_flags | (r->cfg->knobs.fixed_file ? IOSQE_FIXED_FILE : 0);
	r->last_sqe = sqe;
	set_in_flight(r, ring_in_flight(r) + 1);
	return 0;
}

/*
 * The producer's input: the one it is on, or the source's next in a free
 * slot. A slot is free: with the cell under the producer head consumed, at
 * most nr_cells - 1 earlier inputs are unfinished, each with a block between
 * the heads, and the slot's last user is nr_cells + 1 inputs back.
 */
struct input *ring_next_input(struct ring *r)
{
	unsigned taken = atomic_load(&r->nr_inputs);
	struct input *in;

	if (r->producer_input < taken)
		return input_at(r, r->producer_input);
	if (atomic_load(&r->source_done))
		return NULL;
	in = input_at(r, taken);
	if (!source_next(r->source, in)) {
		atomic_store(&r->source_done, true);
		ring_wake_consumer(r);
		return NULL;
	}
	atomic_store(&r->nr_inputs, taken + 1);
	return in;
}

/*
 * The buffers of the blocks the consumer released, taken back in order. The
 * producer's own count of what is released: a block is requested only once
 * the one before it in its cell is taken back here, so no buffer is lost.
 */
static void reclaim_buffers(struct ring *r)
{
	while (r->reclaim_head < r->producer_head) {
		struct cell *c = cell_of(r, r->reclaim_head);

		if (atomic_load(&c->state) != CELL_CONSUMED)
			break;
		r->free_buffers[r->nr_free_buffers++] = c->buf_index;
		r->reclaim_head++;
	}
}

bool ring_can_request(struct ring *r)
{
	struct input *in;

	if (ring_depth_full(r))
		return false;
	reclaim_buffers(r);
	if (r->producer_head - r->reclaim_head >= atomic_load_explicit(&r->cells_limit, memory_order_relaxed) ||
	    r->requested_bytes >= atomic_load(&r->request_limit))
		return false;
	/* A new file waits for a descriptor; one already open always has its turn. */
	if (r->producer_block == 0 && atomic_load(&r->open_files) >= r->max_open_files)
		return false;
	in = ring_next_input(r);
	return in && !(in->stream && in->stream_pending);
}

/* A stream's length is only known at its end: the read that returns 0 (or fails) is its last block. */
static void end_stream(struct ring *r, struct cell *c)
{
	c->last = true;
	r->producer_input++;
	r->producer_block = 0;
}

int ring_request(struct ring *r)
{
	int requested = 0, ret;

	while (ring_can_request(r)) {
		struct input *in = input_at(r, r->producer_input);
		struct cell *c = cell_of(r, r->producer_head);

		if (r->producer_block == 0)
			ring_open_input(r, in, r->producer_input);
		c->input = in;
		c->buf_index = r->free_buffers[--r->nr_free_buffers];
		c->buf = r->memory + (size_t)c->buf_index * r->cfg->knobs.block_size;
		c->offset = r->producer_block * r->cfg->knobs.block_size;
		c->want = block_length(r, in, r->producer_block);
		c->charge = c->want;
		r->requested_bytes += c->charge;
		c->got = 0;
		c->retries = 0;
		/* mixed: from the page cache only if every page of the block is there */
		c->direct = in->mixed && c->want ? !range_cached(in->fd, c->offset, c->want, in->probe_by_reading) : in->direct;
		in->cached_blocks += in->mixed && !c->direct;
		c->last = ++r->producer_block == in->nr_blocks;
		if (c->last) {
			r->producer_input++;
			r->producer_block = 0;
		}
		r->producer_head++;
		requested++;
		if (!c->want) {
			make_available(r, c);
			continue;
		}
		atomic_store_explicit(&c->state, CELL_REQUESTED, memory_order_relaxed);
		r->flight_bytes += c->charge;
		in->stream_pending = in->stream;
		ret = queue_read(r, c);
		if (ret < 0)
			return ret;
	}
	return requested;
}

/* and_wait: also wait for a completion in the same system call, if one can come. */
int ring_submit(struct ring *r, bool and_wait)
{
	unsigned wait_nr = and_wait && r->cfg->knobs.submit_and_wait && ring_in_flight(r) > 0;
	int ret, tries = 0;

	/* A chain ends with its submission: a link flag on the last read would join the next batch. */
	if (r->cfg->knobs.link && r->last_sqe)
		r->last_sqe->flags &= ~IOSQE_IO_LINK;
	r->last_sqe = NULL;
	do {
		ret = io_uring_submit_and_wait(&r->uring, wait_nr);
		if (ret == -EAGAIN)
			sched_yield();
	} while ((ret == -EINTR || ret == -EAGAIN) && ++tries < MAX_RETRIES);
	return ret < 0 ? ret : 0;
}

/* --- producer: reap completions --- */

/* A failed read fails its file, not the stream: the cell goes on, unhashed, so that the file is finished in order. */
static int complete_read(struct ring *r, struct cell *c, int res)
{
	struct input *in = c->input;
	int err = 0;

	in->completions++;
	res = fault_result(in, res);
	if ((res == -EAGAIN || res == -EINTR || res == -ECANCELED) && ++c->retries <= MAX_RETRIES)
		return queue_read(r, c);
	if (in->stream) {
		in->stream_pending = false;
		c->want = res > 0 ? (size_t)res : 0;
		if (res <= 0)
			end_stream(r, c);
		if (res < 0 && !in->error)
			in->error = res;
		make_available(r, c);
		return 0;
	}
	if (res == -EINVAL && c->direct)
		err = -ERR_DIRECT_UNSUPPORTED;
	else if (res == -EOPNOTSUPP && in->rw_flags)
		err = -ERR_DONTCACHE_UNSUPPORTED;
	else if (res < 0)
		err = res;
	else if (res == 0)
		err = -ERR_FILE_SHRANK;
	else if ((c->got += res) > c->want)
		err = -ERR_FILE_LONGER;	/* a read found data past the size seen at open */
	else if (c->got < c->want)
		return queue_read(r, c);
	else if (reads_past_size(r, c))
		in->end_seen = true;
	c->retries = 0;
	if (err && !in->error)
		in->error = err;
	make_available(r, c);
	return 0;
}

/*
 * Reap one completion: returns 1 if one was reaped, 0 if none was ready.
 * Waiting is only safe while something is in flight; the single-threaded loop
 * relies on that always holding when it waits, so say so if it ever does not.
 */
int ring_reap_one(struct ring *r, bool wait)
{
	struct io_uring_cqe *cqe;
	struct cell *c;
	int ret, res;

	if (wait && ring_in_flight(r) == 0)
		return -ERR_STALLED;
	ret = wait ? io_uring_wait_cqe(&r->uring, &cqe) : io_uring_peek_cqe(&r->uring, &cqe);
	if (ret == -EAGAIN || ret == -EINTR)
		return 0;
	if (ret < 0)
		return ret;
	c = io_uring_cqe_get_data(cqe);
	res = cqe->res;
	io_uring_cqe_seen(&r->uring, cqe);
	if (!c)		/* the faults build's devlag: the timeout before a read */
		return 1;
	set_in_flight(r, ring_in_flight(r) - 1);
	atomic_fetch_add_explicit(&r->reaped, 1, memory_order_relaxed);
	ret = complete_read(r, c, res);
	return ret < 0 ? ret : 1;
}

/* After an error: let every read still in flight finish before its buffer or file goes away. */
void ring_drain(struct ring *r)
{
	struct io_uring_cqe *cqe;

	if (!r->have_uring)
		return;
	r->last_sqe = NULL;
	io_uring_submit(&r->uring);
	while (ring_in_flight(r) > 0 && io_uring_wait_cqe(&r->uring, &cqe) == 0) {
		bool read = io_uring_cqe_get_data(cqe) != NULL;

		io_uring_cqe_seen(&r->uring, cqe);
		if (read)
			set_in_flight(r, ring_in_flight(r) - 1);
	}
}
