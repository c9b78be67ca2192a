/* SPDX-License-Identifier: MIT */
/* The ring of cells and its heads: its configuration, fixed at setup, apart from its moving state. */
#ifndef RINGSUM_RING_H
#define RINGSUM_RING_H

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>

#include "input.h"

/* The article's cell states: a cell goes consumed -> requested -> available -> consumed. */
enum cell_state {
	CELL_CONSUMED,			/* free for the producer */
	CELL_REQUESTED,			/* a read is in flight */
	CELL_AVAILABLE,			/* read done, waiting to be hashed */
};

struct cell {
	_Atomic uint32_t state;
	unsigned char *buf;		/* the producer's pick, at each request: its buffer, number buf_index */
	unsigned buf_index;
	struct input *input;		/* the file its block belongs to */
	bool last;			/* the file's last block: the consumer finishes the file with it */
	uint64_t offset;		/* where its block starts in the file */
	size_t want;			/* bytes of the file in this block */
	size_t got;			/* bytes read so far */
	size_t charge;			/* the bytes its request took of the window */
	bool direct;			/* its reads with O_DIRECT: its file's, or, mixed, its block's own */
	unsigned retries;		/* transient failures since the last progress */
	bool file_failed;		/* its file had failed when it became available: not hashed */
};

/*
 * How far the reads may run ahead of the hashing, in blocks (ring_consume.c):
 * fixed (--window), or measured, by how long the hashing waits for the reads.
 */
struct window {
	unsigned blocks;		/* now; nr_cells: every buffer */
	bool measured;			/* still measuring: uring_b3sum without --window, not grown */
	unsigned periods;		/* looked at so far */
	unsigned period_blocks;		/* released since this one began */
	unsigned behind_periods;	/* in a row, the reads behind */
	uint64_t period_start_ns;
	uint64_t waited_ns;		/* the consumer waiting for a read, spun or asleep, this period */
	double most_waited, grown_waited;	/* shares of a period's time */
	uint64_t grown_at;		/* blocks released when it grew; 0: never */
	bool grown_first;		/* by the first period alone */
};

/* One input's bytes to hash: a small file whole, its own hasher, so any order. */
struct hash_job {
	blake3_hasher *hasher;
	const void *data;
	size_t len;
};

/* Whole small files hashed side by side, a file a thread (side_pool.c): helpers started when first needed. */
struct side_pool {
	bool started;			/* side_pool_start() ran */
	unsigned helpers;		/* threads it started: 0 on one core */
	pthread_t *threads;
	const struct hash_job *_Atomic jobs;	/* the batch's, written while the cursor is closed */
	_Atomic size_t nr_jobs;
	_Atomic uint64_t cursor;	/* the batch's number (high 32 bits) and its next job (low; closed: all ones) */
	_Atomic uint32_t batch;		/* the helpers' futex: the batch published last, or the stop */
	_Atomic size_t done;		/* jobs of the batch hashed */
	_Atomic uint32_t consumer_waiting;	/* the consumer's futex, asleep until done */
	_Atomic bool stopping;
};

/*
 * Whether the ring's small files go side by side, measured (ring_consume.c):
 * periods of small files hashed side by side and one by one, in turn.
 */
#define SIDE_TRIAL_PAIRS 8
/* Small files' bytes hashed one by one before the helpers start and side by side is tried (ring_consume.c) */
#define SIDE_TRIAL_AFTER (8ull << 20)
/* ... started at once for more files than this named: 8 MiB of 64 KiB files */
#define SIDE_TRIAL_FILES 128

struct side_trial {
	bool measured;			/* still measuring: uring_b3sum, hashing when behind */
	bool side;			/* this period's way, or the winner's */
	bool helpers_asked;		/* side_pool_start() ran for it */
	uint64_t bytes_before;		/* small files' bytes hashed one by one before */
	unsigned periods;		/* ended so far */
	unsigned files;			/* small files hashed this period */
	uint64_t start_ns;
	uint64_t ns[2];			/* this pair's periods: [0] one by one, [1] side by side */
	double ratios[SIDE_TRIAL_PAIRS];	/* side by side / one by one, a pair each */
	double ratio;			/* their median, once decided */
};

/* How the consumer hashes a block of the ring. */
enum hashing {
	HASH_SERIAL,			/* on the consumer's thread alone */
	HASH_PARALLEL,			/* on every core (--parallel-hash) */
	HASH_WHEN_BEHIND,		/* on every core while the block after it is read already */
};


/* What the options and the variant make of the ring: built once by ring_setup(), read-only after. */
struct ring_config {
	const char *prog;
	struct knobs knobs;		/* as given, those a variant does not use turned off */
	unsigned nr_cells;
	enum hashing hashing;
	enum staging staging;		/* how a cached file's tasks meet the cache (parallel_hash.h) */
	enum staging ring_staging;	/* how the ring's blocks do: in place, prefetched or measured */
	unsigned hash_threads;		/* the most a block can be hashed on: the usable cores, --num-threads */
	bool adapts_window;		/* the window follows the reads and the hashing (ring_consume.c) */
	bool consumer_spins;		/* for the next cell before it sleeps (ring_wake.c) */
	uint64_t side_trial_after;	/* small files' bytes one by one before side by side is tried (ring_consume.c) */
	bool depth_grows;		/* the queue depth and the buffers in use grow once (ring.c) */
	unsigned first_cells;		/* the buffers in use until then: nr_cells, or half of them */
	bool direct_when_cold;		/* O_DIRECT for the files that are not in the page cache */
	unsigned sqe_flags;
	int path_choice;		/* PATH_RING unless the variant chooses */
	bool verbose;
	bool quiet;			/* --check: print only failures */
	bool keyed;
	struct output_format format;
};

struct ring {
	const struct ring_config *cfg;
	struct cell *cells;
	bool huge_pages_advised;	/* ring_use_huge_pages() has run (the producer's) */
	bool trial_said[2];		/* --verbose told a staging trial's outcome ([enum trial_of]; the consumer's) */
	unsigned char *memory;		/* one allocation for every cell's buffer */
	struct io_uring uring;
	bool have_uring;
	struct io_uring_sqe *last_sqe;	/* its link flag is cleared at submit */
	struct trace trace;
	struct progress progress;
	struct effective effective;	/* --effective: a line per file opened; --effective-summary: per way */

	/* the stream of files */
	struct source *source;
	struct input *inputs;		/* slots: nr_cells + 1 inputs can be between the heads */
	unsigned nr_slots;
	_Atomic unsigned nr_inputs;	/* taken from the source so far */
	_Atomic bool source_done;	/* the source has no more */
	_Atomic unsigned open_files;	/* opened by the producer, not yet closed by the consumer */
	unsigned max_open_files;	/* under RLIMIT_NOFILE, with room for the rest of the program */
	unsigned producer_input;	/* the file of the next block to request */
	uint64_t producer_block;	/* that block's index within its file */
	uint64_t producer_head;		/* blocks requested so far, over all files */
	uint64_t consumer_head;		/* blocks hashed so far, over all files */

	/*
	 * The buffers, apart from the cells: the producer gives each request the
	 * buffer released last (a stack), so that the blocks between the heads
	 * use the fewest buffers, the ones most likely still in the cache. The
	 * window: the producer requests while the bytes between the heads are
	 * under it (ring_consume.c sets it).
	 */
	unsigned *free_buffers;		/* the producer's stack */
	unsigned nr_free_buffers;
	uint64_t reclaim_head;		/* the producer's: blocks whose buffers it took back */
	uint64_t requested_bytes;	/* the producer's: the charges of every block it requested */
	uint64_t released_bytes;	/* the consumer's: the charges of every block it released */
	_Atomic uint64_t request_limit;	/* the consumer's: released_bytes + the window's bytes */
	_Atomic bool reads_behind;	/* the consumer's: the window grew, the hashing waiting for the reads */
	_Atomic unsigned depth_limit;	/* the producer's: requests unfinished at most, the queue depth or more */
	_Atomic unsigned cells_limit;	/* the producer's: blocks between the heads at most */
	unsigned depth_waits;		/* the producer's: times it slept with every read allowed out */
	bool last_read_direct;		/* the producer's: its last read queued was O_DIRECT */
	uint64_t deepened_at;		/* the producer's: blocks requested when the depth grew; 0: never */
	uint64_t flight_bytes;		/* the producer's: the charges of the requests unfinished */
	struct window window;		/* the consumer's (ring_consume.c) */
	struct side_trial side_trial;	/* the consumer's (ring_consume.c) */
	unsigned hashed_ahead;		/* cells from the consumer head on hashed side by side already */
	struct hash_job *hash_jobs;	/* hash_side_by_side()'s (ring_consume.c), one per cell */
	struct side_pool side_pool;	/* the consumer's, for them (side_pool.c) */
	unsigned consumer_input;	/* files finished so far */
	unsigned failed_inputs;
	blake3_hasher base_hasher;	/* every input's hasher starts as a copy: plain, keyed or derive-key */
	int fallback_reason;		/* io_uring could not be set up (negative errno): reading with pread() */
	uint64_t bytes_hashed;
	uint64_t parallel_bytes;	/* of bytes_hashed, those hashed on every core */
	_Atomic unsigned in_flight;	/* requests queued or submitted, not yet reaped */
	_Atomic unsigned in_flight_peak; /* the most in flight since the last trace row */
	_Atomic unsigned reaped;	/* completions since the last consumer run */
	_Atomic int error;		/* first fatal error, negative: it stops the whole stream */

	/* waking a sleeping producer or consumer (the multithreaded variants) */
	int eventfd;
	_Atomic bool producer_sleeping;
	_Atomic int producer_cpu;	/* where the producer last looked for work */
	unsigned consumer_waits, consumer_spun, consumer_slept;	/* for the head cell: all, spun first, slept */
	_Atomic bool consumer_sleeping;
	_Atomic uint32_t consumer_wakeups;
};

/* ring_setup.c: the configuration, the buffers and io_uring */
int ring_setup(struct ring *r, struct ring_config *cfg, const struct options *opts, const struct variant *v);
void ring_teardown(struct ring *r);
void ring_use_huge_pages(struct ring *r);
unsigned open_files_allowed(void);
void ring_say_hashing(const struct ring *r, const struct variant *v);

/* ring.c: the ring buffer protocol and its producer; ring_wake.c: the two sides' sleeping */
void ring_start(struct ring *r, struct source *source);
struct input *ring_next_input(struct ring *r);
void ring_open_input(struct ring *r, struct input *in, unsigned index);
int ring_request(struct ring *r);
int ring_submit(struct ring *r, bool and_wait);
int ring_reap_one(struct ring *r, bool wait);
bool ring_can_request(struct ring *r);
void ring_drain(struct ring *r);
void ring_fail(struct ring *r, int err);
void ring_producer_sleep(struct ring *r);
void ring_consumer_sleep(struct ring *r);
void ring_say_waits(const struct ring *r);
void ring_wake_producer(struct ring *r);
void ring_wake_consumer(struct ring *r);

/* ring_depth.c: the producer's queue depth, and uring_b3sum's growing it */
bool ring_depth_full(struct ring *r);
bool ring_deepen(struct ring *r);
void ring_say_depth(const struct ring *r);

/* ring_consume.c: the consumer, hashing the available cells in order; it calls ring.c, never called by it */
unsigned ring_consume(struct ring *r);
void ring_window_start(struct ring *r);
void ring_say_window(const struct ring *r);
void ring_side_trial_start(struct ring *r, int named_files);
void ring_say_side_trial(const struct ring *r);

/* side_pool.c: whole small files side by side, on the consumer's thread and helpers of plain C */
/* Helpers for a pool hashing on up to threads threads, once; as many as start (none: the consumer alone). */
void side_pool_start(struct side_pool *p, unsigned threads);
/* The jobs hashed on the consumer's thread and the helpers', returning once all are. */
void side_pool_hash(struct side_pool *p, const struct hash_job *jobs, size_t n);
void side_pool_stop(struct side_pool *p);

/* Threads hashing small files side by side: the cores, but no more than a batch's files (a cell each) */
static inline unsigned side_threads(const struct ring *r)
{
	return r->cfg->hash_threads < r->cfg->nr_cells ? r->cfg->hash_threads : r->cfg->nr_cells;
}

/* The time the ring's sides and the side pool measure and spin by */
static inline uint64_t ring_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep while *word is seen; wake up to waiters sleeping on it (the consumer's and the side pool's) */
static inline void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static inline void futex_wake(_Atomic uint32_t *word, int waiters)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, waiters, NULL, NULL, 0);
}

/* A spinning thread's pause, for the sibling hyperthread and the memory bus */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline struct cell *cell_of(struct ring *r, uint64_t block)
{
	return &r->cells[block % r->cfg->nr_cells];
}

static inline enum cell_state cell_state(struct cell *c)
{
	return atomic_load_explicit(&c->state, memory_order_acquire);
}

static inline void hash_update(const struct ring *r, blake3_hasher *hasher, const void *data, size_t len)
{
	if (r->cfg->hashing == HASH_PARALLEL)
		hash_parallel(hasher, data, len, r->cfg->ring_staging);
	else
		hash_serial(hasher, data, len, r->cfg->ring_staging);
}

static inline struct input *input_at(const struct ring *r, unsigned index)
{
	return &r->inputs[index % r->nr_slots];
}

static inline bool ring_consumed_all(struct ring *r)
{
	return atomic_load(&r->source_done) && r->consumer_input == atomic_load(&r->nr_inputs);
}

static inline bool ring_produced_all(struct ring *r)
{
	return atomic_load(&r->source_done) && r->producer_input == atomic_load(&r->nr_inputs);
}

static inline unsigned ring_in_flight(struct ring *r)
{
	return atomic_load_explicit(&r->in_flight, memory_order_relaxed);
}


/* loop_threaded.c: the producer thread and the consumer loop */
int hash_stream_threaded(struct ring *r);

/* loop_pread.c: plain pread(), for b3sum_pread and for uring_b3sum without io_uring */
int hash_stream_pread(struct ring *r);

/* After each block hashed and each file finished: a compare when off, a coarse clock read when on. */
static inline void progress_tick(struct ring *r)
{
	if (r->progress.on)
		progress_draw(&r->progress, r->bytes_hashed + r->progress.memory_bytes, r->consumer_input);
}


#endif
