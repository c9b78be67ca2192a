/* SPDX-License-Identifier: MIT */
/*
 * The ring buffer protocol shared by every io_uring hasher.
 *
 * The blocks of the files, file after file, pass through a ring of cells:
 * the b-th block requested goes to cell b % nr_cells. A cell is consumed
 * (free), requested (read in flight) or available (read, waiting to be
 * hashed). The producer head turns consumed cells into requested ones, in
 * order, while fewer than queue_depth requests are unfinished; completions
 * turn requested cells into available ones, in any order; the consumer head
 * hashes available cells in order and turns them back into consumed ones.
 * Each head only ever moves forward, and the producer head never passes a
 * cell the consumer has not released, so every block is hashed exactly once,
 * in order. A block with nothing to read (an empty or failed file) is
 * available as soon as it is requested, so every file reaches the consumer.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ringsum.h"

/* A request that keeps failing transiently this often without progress is an error, not a hang. */
#define MAX_RETRIES 1000

#ifdef RINGSUM_FAULTS
/*
 * Test builds only: RINGSUM_FAULTS="short:3,eagain:5,eintr:6,ecanceled:7,eio:9"
 * replaces the result of the Nth completion of each file (short: half the bytes, if more than one).
 * The regressions that `ringsum check` must catch (docs/regression-check.md):
 * slow:P spends P% more time, busy, as slower code would; depth:N ignores --queue-depth
 * and keeps at most N reads unfinished; buffered:1 drops O_DIRECT; tick:MS redraws
 * --progress every MS milliseconds (0: after every block and file), so tests need no timing;
 * readlag:MS waits before every read is queued (a slow disk), hashlag:MS before every block
 * is hashed (a slow core), so a test can put the reads behind the hashing or ahead of it.
 * Without the variable, a file `ringsum-faults` beside the binary holds the spec: one run can
 * then time several injected builds side by side (harness/check/power.py).
 */
static struct timespec process_start;

/* slow:P is a share of the whole run, start-up included, as a user times it. */
__attribute__((constructor)) static void note_process_start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &process_start);
}

static const char *fault_spec(char *buf, size_t size)
{
	const char *spec = getenv("RINGSUM_FAULTS");
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
	FILE *f;

	if (spec || len <= 0)
		return spec;
	exe[len] = '\0';
	strcpy(strrchr(exe, '/') + 1, "ringsum-faults");
	f = fopen(exe, "re");
	if (!f)
		return NULL;
	spec = fgets(buf, size, f);
	fclose(f);
	return spec;
}

static void parse_faults(struct ring *r)
{
	static const struct { const char *name; int res; } kinds[] = {
		{ "short", 0 }, { "eagain", -EAGAIN }, { "eintr", -EINTR },
		{ "ecanceled", -ECANCELED }, { "eio", -EIO },
	};
	char buf[256];
	const char *spec = fault_spec(buf, sizeof(buf));
	char name[16];
	unsigned long long n;
	int used;

	r->fault_start = process_start;
	while (spec && r->nr_faults < 16 && sscanf(spec, "%15[a-z]:%llu%n", name, &n, &used) == 2) {
		for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(name, kinds[i].name))
				r->faults[r->nr_faults++] = (struct fault){ n, kinds[i].res };
		if (!strcmp(name, "slow"))
			r->slow_percent = n;
		else if (!strcmp(name, "depth") && n > 0 && n < r->knobs.queue_depth)
			r->knobs.queue_depth = n;
		else if (!strcmp(name, "tick"))
			r->progress.interval_ns = n * 1000000;
		else if (!strcmp(name, "buffered") && n)
			r->knobs.direct = r->direct_when_cold = false;
		else if (!strcmp(name, "readlag"))
			r->read_lag_ms = n;
		else if (!strcmp(name, "hashlag"))
			r->hash_lag_ms = n;
		spec += used + (spec[used] == ',');
	}
}

static int inject_fault(struct ring *r, struct input *in, int res)
{
	for (unsigned i = 0; i < r->nr_faults; i++)
		if (r->faults[i].completion == in->completions && res > 0)
			return r->faults[i].res ? r->faults[i].res : res > 1 ? res / 2 : res;
	return res;
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

static void inject_lag(unsigned ms)
{
	struct timespec lag = { ms / 1000, ms % 1000 * 1000000L };

	while (ms && nanosleep(&lag, &lag) && errno == EINTR)
		;
}

/* Busy, not asleep: a slower hash or copy costs CPU time too. */
static void inject_slowdown(struct ring *r)
{
	double until = seconds_since(&r->fault_start) * (1 + r->slow_percent / 100.0);

	while (r->slow_percent && seconds_since(&r->fault_start) < until)
		;
}
#else
static void parse_faults(struct ring *r) { (void)r; }
static int inject_fault(struct ring *r, struct input *in, int res) { (void)r; (void)in; return res; }
static void inject_slowdown(struct ring *r) { (void)r; }
#define inject_lag(ms) ((void)0)
#endif

static const unsigned droppable_setup_flags[] = {
	IORING_SETUP_DEFER_TASKRUN,
	IORING_SETUP_SINGLE_ISSUER,
	IORING_SETUP_TASKRUN_FLAG,
	IORING_SETUP_COOP_TASKRUN,
};

static int setup_uring(struct ring *r, unsigned flags)
{
	struct io_uring_params p;
	unsigned i = 0;
	int ret;

	for (;;) {
		memset(&p, 0, sizeof(p));
		p.flags = flags;
		p.sq_thread_idle = 100;	/* ms before the SQPOLL thread sleeps */
		ret = io_uring_queue_init_params(r->knobs.queue_depth, &r->uring, &p);
		if (ret != -EINVAL || i == sizeof(droppable_setup_flags) / sizeof(droppable_setup_flags[0]))
			return ret;
		flags &= ~droppable_setup_flags[i++];
	}
}

static int register_buffers(struct ring *r)
{
	struct iovec *iov = calloc(r->nr_cells, sizeof(*iov));
	int ret;

	if (!iov)
		return -ENOMEM;
	for (unsigned i = 0; i < r->nr_cells; i++)
		iov[i] = (struct iovec){ .iov_base = r->cells[i].buf, .iov_len = r->knobs.block_size };
	ret = io_uring_register_buffers(&r->uring, iov, r->nr_cells);
	free(iov);
	return ret;
}

int ring_setup(struct ring *r, const struct options *opts, const struct variant *v)
{
	size_t bytes;
	int ret;

	memset(r, 0, sizeof(*r));
	r->eventfd = -1;
	r->knobs = opts->knobs;
	knobs_for_variant(&r->knobs, v);
	r->direct_when_cold = v->direct_when_cold && !r->knobs.direct && !r->knobs.buffered &&
			      r->knobs.block_size % DIRECT_ALIGN == 0;
	r->nr_cells = v->uses_uring ? opts->knobs.buffers : 1;
	r->hash_threads = hash_max_threads();
	r->hashing = r->knobs.parallel_hash ? HASH_PARALLEL :
		     v->hashes_when_behind && !r->knobs.serial_hash && r->hash_threads > 1 && r->nr_cells > 1 ?
		     HASH_WHEN_BEHIND : HASH_SERIAL;
	r->prog = opts->prog;
	progress_init(&r->progress, opts);
	r->path_choice = v->chooses_path && !opts->no_mmap ? opts->path_choice : PATH_RING;
	r->verbose = opts->verbose;
	r->quiet = opts->quiet;
	r->keyed = opts->keyed;
	r->format = opts->format;
	r->sqe_flags = (r->knobs.drain ? IOSQE_IO_DRAIN : 0) | (r->knobs.link ? IOSQE_IO_LINK : 0);

	if (__builtin_mul_overflow(r->knobs.block_size, (size_t)r->nr_cells, &bytes))
		return -ENOMEM;
	ret = posix_memalign((void **)&r->memory, r->knobs.huge_pages ? HUGE_PAGE_SIZE : DIRECT_ALIGN, bytes);
	if (ret)
		return -ret;
	r->cells = calloc(r->nr_cells, sizeof(*r->cells));
	r->nr_slots = r->nr_cells + 1;
	r->inputs = calloc(r->nr_slots, sizeof(*r->inputs));
	if (!r->cells || !r->inputs)
		return -ENOMEM;
	for (unsigned i = 0; i < r->nr_slots; i++)
		r->inputs[i].fd = -1;
	for (unsigned i = 0; i < r->nr_cells; i++)
		r->cells[i].buf = r->memory + (size_t)i * r->knobs.block_size;

	parse_faults(r);
	if (!v->uses_uring)
		return 0;
	ret = setup_uring(r, v->setup_flags | (r->knobs.sqpoll ? IORING_SETUP_SQPOLL : 0) |
			  (r->knobs.iopoll ? IORING_SETUP_IOPOLL : 0));
	/* Forbidden (seccomp, io_uring_disabled) or absent: the same hashes from pread(), one cell. */
	if (v->falls_back && (ret == -ENOSYS || ret == -EPERM)) {
		r->fallback_reason = ret;
		r->nr_cells = 1;
		r->hashing = r->knobs.parallel_hash ? HASH_PARALLEL : HASH_SERIAL;	/* one cell: no next block */
		r->knobs.fixed_buffers = r->knobs.fixed_file = r->knobs.iopoll = false;
		return 0;
	}
	if (ret < 0)
		return ret;
	r->have_uring = true;
	if (r->knobs.fixed_buffers && (ret = register_buffers(r)) < 0)
		return ret;
	/* Files with blocks in the ring, and the one being opened, each need a slot. */
	if (r->knobs.fixed_file && (ret = io_uring_register_files_sparse(&r->uring, r->nr_cells + 1)) < 0)
		return ret;
	if (v->uses_eventfd) {
		r->eventfd = eventfd(0, EFD_CLOEXEC);
		if (r->eventfd < 0)
			return -errno;
		ret = io_uring_register_eventfd(&r->uring, r->eventfd);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * An O_DIRECT read becomes one segment per physically contiguous piece of its
 * buffer: with 4K pages a virtio disk's 254 segments cap a request near 1M,
 * with 2M pages at its 4M max_sectors. Only once a file is read with O_DIRECT:
 * many small buffered files touch 4K of a cell, not a 2M page each. Refused
 * (THP off): 4K pages, as without it.
 */
void ring_use_huge_pages(struct ring *r)
{
	if (r->knobs.huge_pages && !r->huge_pages_advised)
		madvise(r->memory, r->knobs.block_size * r->nr_cells, MADV_HUGEPAGE);
	r->huge_pages_advised = true;
}

void ring_teardown(struct ring *r)
{
	inject_slowdown(r);
	if (r->have_uring)
		io_uring_queue_exit(&r->uring);
	if (r->eventfd >= 0)
		close(r->eventfd);
	for (unsigned i = 0; r->inputs && i < r->nr_slots; i++)
		input_free(&r->inputs[i]);
	free(r->inputs);
	free(r->cells);
	free(r->memory);
}

/* Descriptors already open, so that the files opened ahead stay under RLIMIT_NOFILE. */
static unsigned count_open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!dir)
		return 64;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n > 3 ? n - 3 : 0;	/* ., .. and the directory's own */
}

/*
 * Never fail a file for EMFILE: the producer opens a file only while fewer
 * than this are open, leaving room for a checksum file, the trace and a spare.
 */
static unsigned max_open_files(void)
{
	struct rlimit limit;
	rlim_t used = count_open_fds() + 3;

	if (getrlimit(RLIMIT_NOFILE, &limit) || limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > UINT32_MAX)
		return UINT32_MAX;
	return limit.rlim_cur > used + 1 ? limit.rlim_cur - used : 1;
}

void ring_start(struct ring *r, struct source *source)
{
	r->source = source;
	atomic_store(&r->nr_inputs, 0);
	atomic_store(&r->source_done, false);
	atomic_store(&r->open_files, 0);
	r->max_open_files = max_open_files();
	r->producer_input = 0;
	r->producer_block = 0;
	r->producer_head = 0;
	r->consumer_head = 0;
	r->consumer_input = 0;
	r->failed_inputs = 0;
	r->bytes_hashed = 0;
	r->last_sqe = NULL;
	atomic_store(&r->in_flight, 0);
	atomic_store(&r->reaped, 0);
	atomic_store(&r->error, 0);
	for (unsigned i = 0; i < r->nr_cells; i++)
		atomic_store(&r->cells[i].state, CELL_CONSUMED);
}

/* --- waking the other side (only the multithreaded variant ever sleeps) --- */

static void wake_producer(struct ring *r)
{
	if (r->eventfd >= 0 && atomic_load(&r->producer_sleeping))
		eventfd_write(r->eventfd, 1);
}

static void wake_consumer(struct ring *r)
{
	if (atomic_load(&r->consumer_sleeping)) {
		atomic_fetch_add(&r->consumer_wakeups, 1);
		syscall(SYS_futex, &r->consumer_wakeups, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

void ring_fail(struct ring *r, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&r->error, &none, err);
	wake_consumer(r);
	if (r->eventfd >= 0)
		eventfd_write(r->eventfd, 1);
}

/*
 * The sleeping flag is stored before the condition is checked again, and the
 * other side changes the condition before it loads the flag (all seq_cst):
 * one of the two always sees the other, so no wake-up is lost.
 */
void ring_producer_sleep(struct ring *r)
{
	eventfd_t ignored;

	atomic_store(&r->producer_sleeping, true);
	if (!io_uring_cq_ready(&r->uring) && !ring_can_request(r) && !atomic_load(&r->error) &&
	    !(ring_produced_all(r) && ring_in_flight(r) == 0))
		eventfd_read(r->eventfd, &ignored);
	atomic_store(&r->producer_sleeping, false);
}

void ring_consumer_sleep(struct ring *r)
{
	uint32_t seen = atomic_load(&r->consumer_wakeups);

	atomic_store(&r->consumer_sleeping, true);
	if (!ring_consumed_all(r) && cell_state(cell_of(r, r->consumer_head)) != CELL_AVAILABLE &&
	    !atomic_load(&r->error))
		syscall(SYS_futex, &r->consumer_wakeups, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
	atomic_store(&r->consumer_sleeping, false);
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

static void make_available(struct ring *r, struct cell *c)
{
	atomic_store(&c->state, CELL_AVAILABLE);
	wake_consumer(r);
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

/* Queue a read of what the cell still lacks; with O_DIRECT it stays aligned. */
static int queue_read(struct ring *r, struct cell *c)
{
	int fd = r->knobs.fixed_file ? (int)c->input->fixed_slot : c->input->fd;
	struct io_uring_sqe *sqe = get_sqe(r);
	size_t start = c->got, end = c->want;
	/* A stream is read where it stands (offset -1), one read at a time. */
	uint64_t offset = c->input->stream ? (uint64_t)-1 : c->offset + start;

	if (!sqe)
		return -EBUSY;
	inject_lag(r->read_lag_ms);
	if (c->input->direct) {
		start &= ~(size_t)(DIRECT_ALIGN - 1);
		end = (end + DIRECT_ALIGN - 1) & ~(size_t)(DIRECT_ALIGN - 1);
		c->got = start;
		offset = c->offset + start;
	}
	if (r->knobs.fixed_buffers)
		io_uring_prep_read_fixed(sqe, fd, c->buf + start, end - start, offset, c - r->cells);
	else
		io_uring_prep_read(sqe, fd, c->buf + start, end - start, offset);
	io_uring_sqe_set_data(sqe, c);
	sqe->rw_flags = c->input->rw_flags;
	sqe->flags |= r->sqe_flags | (r->knobs.fixed_file ? IOSQE_FIXED_FILE : 0);
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
		wake_consumer(r);
		return NULL;
	}
	atomic_store(&r->nr_inputs, taken + 1);
	return in;
}

bool ring_can_request(struct ring *r)
{
	struct input *in;

	if (ring_in_flight(r) >= r->knobs.queue_depth ||
	    atomic_load(&cell_of(r, r->producer_head)->state) != CELL_CONSUMED)
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
			input_open(r, in, r->producer_input);
		c->input = in;
		c->offset = r->producer_block * r->knobs.block_size;
		c->want = block_length(r, in, r->producer_block);
		c->got = 0;
		c->retries = 0;
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
	unsigned wait_nr = and_wait && r->knobs.submit_and_wait && ring_in_flight(r) > 0;
	int ret, tries = 0;

	/* A chain ends with its submission: a link flag on the last read would join the next batch. */
	if (r->knobs.link && r->last_sqe)
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
	res = inject_fault(r, in, res);
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
	if (res == -EINVAL && in->direct)
		err = -ERR_DIRECT_UNSUPPORTED;
	else if (res == -EOPNOTSUPP && in->rw_flags)
		err = -ERR_DONTCACHE_UNSUPPORTED;
	else if (res < 0)
		err = res;
	else if (res == 0)
		err = -ERR_FILE_SHRANK;
	else if ((c->got += res) > c->want)
		err = -ERR_FILE_LONGER;	/* an O_DIRECT read found data past the size seen at open */
	else if (c->got < c->want)
		return queue_read(r, c);
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
		io_uring_cqe_seen(&r->uring, cqe);
		set_in_flight(r, ring_in_flight(r) - 1);
	}
}

/* --- consumer --- */

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
	bool adapts = r->hashing == HASH_WHEN_BEHIND && c->want >= PARALLEL_HASH_MIN;
	bool parallel = r->hashing == HASH_PARALLEL;
	size_t done = 0, piece, left;

	inject_lag(r->hash_lag_ms);
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

/*
 * --verbose, at the end: how the blocks read through the ring were hashed, when
 * uring_b3sum chose (the per-file shares are in --effective).
 */
void ring_say_hashing(const struct ring *r, const struct variant *v)
{
	if (!v->hashes_when_behind || !r->have_uring || r->knobs.parallel_hash || r->knobs.serial_hash ||
	    !r->bytes_hashed)
		return;
	if (r->hashing == HASH_WHEN_BEHIND)
		fprintf(stderr, "%s: %.0f%% of the %.1f MiB read through the ring hashed on %u cores (the next block "
			"was read already), the rest on one\n", r->prog, 100.0 * r->parallel_bytes / r->bytes_hashed,
			r->bytes_hashed / 1048576.0, r->hash_threads);
	else
		fprintf(stderr, "%s: the blocks read through the ring hashed on one core: %s\n", r->prog,
			r->hash_threads > 1 ? "one buffer, no next block to see" :
			"one hashing thread (the CPUs it may use, or --num-threads)");
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

	while (blocks < r->nr_cells && !ring_consumed_all(r)) {
		struct cell *c = cell_of(r, r->consumer_head);

		if (cell_state(c) != CELL_AVAILABLE)
			break;
		if (!c->input->error)
			hash_block(r, c);
		r->bytes_hashed += c->want;
		if (c->last)
			input_finish(r, c->input);
		progress_tick(r);
		atomic_store(&c->state, CELL_CONSUMED);
		wake_producer(r);
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
