/* SPDX-License-Identifier: MIT */
/* ringsum core: options, the ring of cells, io_uring setup, trace and output shared by every hasher. */
#ifndef RINGSUM_H
#define RINGSUM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <liburing.h>

#include "blake3.h"
#include "knobs.h"

#define RINGSUM_VERSION "0.1.0"
#define DIRECT_ALIGN 4096u
#define MAX_BLOCK_SIZE (1ul << 30)
#define MAX_QUEUE_DEPTH 32768u		/* IORING_MAX_ENTRIES */
#define MIN_STAGE_SIZE (32ul << 10)	/* two AVX-512 leaves: a smaller task forks for nothing */
#define MAX_STAGE_SIZE (64ul << 20)	/* per hashing thread */
#define MAX_FIXED_BUFFERS 16384u	/* IORING_MAX_REG_BUFFERS */
#define HUGE_PAGE_SIZE (2u << 20)
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080	/* Linux 6.14: drop the pages read from the page cache after the copy */
#endif

/* Our own failures, returned like negative errno values and named by ringsum_strerror(). */
enum {
	ERR_FILE_CHANGED = 4096,	/* size or mtime changed while it was read */
	ERR_FILE_SHRANK,		/* a read hit end of file before the size seen at open */
	ERR_FILE_LONGER,		/* data past the size seen at open: it grew, or its size is not real (/proc) */
	ERR_NOT_REGULAR,		/* a directory, FIFO, device or socket */
	ERR_DIRECT_UNSUPPORTED,		/* the filesystem refuses O_DIRECT */
	ERR_DONTCACHE_UNSUPPORTED,	/* the kernel or filesystem refuses RWF_DONTCACHE */
	ERR_STALLED,			/* waiting for a completion with nothing in flight */
	ERR_NOT_POLLABLE,		/* IOPOLL on a device without poll queues */
	ERR_KEYED_STDIN,		/* --keyed reads the key from stdin, so - cannot be hashed */
	/* b3sum's complaints about a --check line: printed alone, they fail that line only */
	ERR_EMPTY_LINE,
	ERR_LINE_FORMAT,
	ERR_HASH_LENGTH,
	ERR_HEX,
	ERR_ESCAPE,
	ERR_EMPTY_PATH,
	ERR_NUL_IN_PATH,
	ERR_REPLACEMENT_IN_PATH,
	ERR_NOT_UTF8,			/* a checksum file that is not UTF-8 stops everything, as in b3sum */
};

static inline bool is_line_error(int err)
{
	return -err >= ERR_EMPTY_LINE && -err <= ERR_REPLACEMENT_IN_PATH;
}

/* What b3sum prints for each hash: its flags that shape the output. */
struct output_format {
	uint64_t length;		/* --length: output bytes (default 32) */
	uint64_t seek;			/* --seek: offset of the first output byte */
	bool raw;			/* --raw: the bytes themselves, no name */
	bool tag;			/* --tag: BSD style, BLAKE3 (FILE) = HASH */
	bool no_names;			/* --no-names: the hash alone */
};

struct ring;

struct options {
	const char *prog;		/* as invoked: argv[0]'s last component, for every message */
	struct knobs knobs;		/* the ring's (knobs.h) */
	struct output_format format;
	bool keyed;			/* --keyed: the 32-byte key comes from stdin */
	const char *derive_key;		/* --derive-key CONTEXT, or NULL */
	bool length_given;
	unsigned num_threads;		/* --num-threads: hashing threads; 0: every core */
	bool no_mmap;			/* --no-mmap: never hash from a mapping of the page cache */
	bool check;			/* uring_b3sum: FILEs are b3sum checksum files to verify */
	bool recursive;			/* --recursive: hash the files of directories among the FILEs */
	bool quiet;			/* with --check: print only failures */
	bool verbose;			/* say how each file is read */
	bool progress;			/* --progress: bytes, files, rate and time left on stderr, a terminal */
	int path_choice;		/* PATH_AUTO, PATH_MEMORY or PATH_RING */
	bool path_given;
	uint64_t given;			/* bit i: knob_table[i] was given (options.c) */
	char defaults_text[4096];	/* uring_b3sum's options file; option values point into it */
	const char *trace_path;		/* CSV of consumer runs, or NULL */
	const char *effective_path;	/* JSON lines: how each file was really read, or NULL */
	char **files;
	int nr_files;
};

struct variant {
	const char *name;
	bool uses_uring;
	bool uses_eventfd;		/* the producer sleeps on an eventfd */
	bool waits_on_completions;	/* its loop may block in the kernel for completions */
	unsigned setup_flags;		/* io_uring setup flags to try, dropped in turn */
	bool chooses_path;		/* hashes files in the page cache from memory (uring_b3sum) */
	bool falls_back;		/* without io_uring, reads with pread() instead of failing */
	bool direct_when_cold;		/* reads a file of --direct-min or more, under 3/4 cached, with O_DIRECT */
	bool huge_pages;		/* default of --huge-pages */
	size_t block_size;		/* default; 0: the article's 512K */
	unsigned queue_depth;		/* default; 0: the article's 4 */
	unsigned buffers_per_depth;	/* default buffers per queue depth; 0: 1 */
	size_t tree_direct_min;		/* what --direct-min 0 means for many files (--recursive, or more than one FILE) */
	bool hashes_when_behind;	/* a ring block on every core while the next one waits (HASH_WHEN_BEHIND) */
	int (*hash_stream)(struct ring *ring);
};

enum path_choice { PATH_AUTO, PATH_MEMORY, PATH_RING };

/*
 * One file to hash. Inputs pass through the ring in order, so their lines come out in order.
 * They come one at a time from a source and live in a slot until finished.
 */
struct input {
	const char *path;
	const char *shown;		/* --check: the name as its line wrote it, escapes kept */
	char *text;			/* the slot's own copy of path and shown, for --check lines */
	size_t text_size;
	bool checking;			/* --check: compare with expected instead of printing */
	uint8_t expected[BLAKE3_OUT_LEN];
	int fd;
	bool borrowed_fd;		/* stdin: not ours to close */
	bool walked;			/* found by --recursive: a symlink there is not followed */
	bool stream;			/* a pipe, character device or stdin: read in order up to end of file */
	bool stream_pending;		/* a stream's read is in flight: its next one waits */
	bool direct;			/* read with O_DIRECT */
	int rw_flags;			/* preadv2()'s flags for its reads: RWF_DONTCACHE or 0 */
	struct stat st;			/* at open: the file must still match it when done */
	uint64_t size;			/* bytes to read (a block device's from BLKGETSIZE64) */
	uint64_t nr_blocks;		/* at least 1: an empty or failed file still passes the consumer once */
	uint64_t completions;		/* reaped for this file, counted by fault injection */
	int error;			/* first error, negative; the producer's until the file's last block is available */
	bool from_memory;		/* hash it from the page cache instead of reading it */
	bool opened;			/* its path was chosen: --effective reports it once it is finished */
	uint64_t ring_bytes;		/* hashed from the ring's cells */
	uint64_t parallel_bytes;	/* of those, hashed on every core */
	unsigned fixed_slot;		/* its index among the registered files */
	blake3_hasher hasher;
};

/* The article's cell states: a cell goes consumed -> requested -> available -> consumed. */
enum cell_state {
	CELL_CONSUMED,			/* free for the producer */
	CELL_REQUESTED,			/* a read is in flight */
	CELL_AVAILABLE,			/* read done, waiting to be hashed */
};

struct cell {
	_Atomic uint32_t state;
	unsigned char *buf;
	struct input *input;		/* the file its block belongs to */
	bool last;			/* the file's last block: the consumer finishes the file with it */
	uint64_t offset;		/* where its block starts in the file */
	size_t want;			/* bytes of the file in this block */
	size_t got;			/* bytes read so far */
	unsigned retries;		/* transient failures since the last progress */
};

struct trace {
	FILE *out;
};

/* --progress (progress.c): drawn only when asked for and stderr is a terminal. */
struct progress {
	bool on;
	bool stdout_shared;		/* stdout is a terminal too: its lines move the progress line */
	bool shown;			/* the line is on the terminal now */
	bool hidden;			/* taken away for a line, to be put back after it */
	bool total_known;		/* regular files named on the command line: a total and a time left */
	const char *prog;
	unsigned width;			/* the terminal's columns */
	unsigned total_files;
	uint64_t total_bytes;
	uint64_t memory_bytes;		/* hashed from the page cache: the ring never sees them */
	int64_t start_ns, drawn_ns;	/* CLOCK_MONOTONIC_COARSE */
	int64_t interval_ns;		/* between redraws; tests set it with RINGSUM_FAULTS=tick:MS */
	char line[256];
	unsigned len;
};

/* How the consumer hashes a block of the ring. */
enum hashing {
	HASH_SERIAL,			/* on the consumer's thread alone */
	HASH_PARALLEL,			/* on every core (--parallel-hash) */
	HASH_WHEN_BEHIND,		/* on every core while the block after it is read already */
};

struct ring {
	struct cell *cells;
	unsigned nr_cells;
	struct knobs knobs;		/* as given, those a variant does not use turned off */
	enum hashing hashing;
	unsigned hash_threads;		/* the most a block can be hashed on: the usable cores, --num-threads */
	bool direct_when_cold;		/* O_DIRECT for the files that are not in the page cache */
	bool huge_pages_advised;	/* ring_use_huge_pages() has run (the producer's) */
	unsigned sqe_flags;
	unsigned char *memory;		/* one allocation for every cell's buffer */
	struct io_uring uring;
	bool have_uring;
	struct io_uring_sqe *last_sqe;	/* its link flag is cleared at submit */
	struct trace trace;
	struct progress progress;
	FILE *effective;		/* --effective: a line per file opened, or NULL */

	/* the stream of files */
	const char *prog;
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
	unsigned consumer_input;	/* files finished so far */
	unsigned failed_inputs;
	bool quiet;			/* --check: print only failures */
	bool keyed;
	bool no_mmap;
	struct output_format format;
	blake3_hasher base_hasher;	/* every input's hasher starts as a copy: plain, keyed or derive-key */
	int fallback_reason;		/* io_uring could not be set up (negative errno): reading with pread() */
	uint64_t bytes_hashed;
	uint64_t parallel_bytes;	/* of bytes_hashed, those hashed on every core */
	int path_choice;
	bool verbose;
	_Atomic unsigned in_flight;	/* requests queued or submitted, not yet reaped */
	_Atomic unsigned in_flight_peak; /* the most in flight since the last trace row */
	_Atomic unsigned reaped;	/* completions since the last consumer run */
	_Atomic int error;		/* first fatal error, negative: it stops the whole stream */
#ifdef RINGSUM_FAULTS
	struct fault { uint64_t completion; int res; } faults[16];
	unsigned nr_faults;
	unsigned long long slow_percent;
	unsigned read_lag_ms, hash_lag_ms;
	struct timespec fault_start;
#endif

	/* waking a sleeping producer or consumer (the multithreaded variant) */
	int eventfd;
	_Atomic bool producer_sleeping;
	_Atomic bool consumer_sleeping;
	_Atomic uint32_t consumer_wakeups;
};

/* options.c */
int parse_options(struct options *opts, int argc, char **argv, const struct variant *v);
void knobs_for_variant(struct knobs *k, const struct variant *v);

/* ring.c: the ring buffer protocol */
int ring_setup(struct ring *r, const struct options *opts, const struct variant *v);
void ring_teardown(struct ring *r);
void ring_use_huge_pages(struct ring *r);
void ring_start(struct ring *r, struct source *source);
struct input *ring_next_input(struct ring *r);
int ring_request(struct ring *r);
int ring_submit(struct ring *r, bool and_wait);
int ring_reap_one(struct ring *r, bool wait);
bool ring_can_request(struct ring *r);
unsigned ring_consume(struct ring *r);
void ring_drain(struct ring *r);
void ring_fail(struct ring *r, int err);
void ring_producer_sleep(struct ring *r);
void ring_consumer_sleep(struct ring *r);
void ring_say_hashing(const struct ring *r, const struct variant *v);

static inline struct cell *cell_of(struct ring *r, uint64_t block)
{
	return &r->cells[block % r->nr_cells];
}

static inline enum cell_state cell_state(struct cell *c)
{
	return atomic_load_explicit(&c->state, memory_order_acquire);
}

/* blake3_hasher_update_tbb() forking no finer than pays on this length (parallel_hash.cpp). */
void hash_parallel(blake3_hasher *hasher, const void *data, size_t len);
/* The same for a mapping of the page cache, each task of at most stage bytes brought into the cache first. */
void hash_mapped(blake3_hasher *hasher, const void *data, size_t len, size_t stage, bool copy, size_t release);
/* --num-threads: no more hashing threads than this. */
void hash_limit_threads(size_t threads);
/* How many threads a parallel hash can run on: the cores this process may use, under --num-threads. */
size_t hash_max_threads(void);

static inline void hash_update(const struct ring *r, blake3_hasher *hasher, const void *data, size_t len)
{
	if (r->hashing == HASH_PARALLEL)
		hash_parallel(hasher, data, len);
	else
		blake3_hasher_update(hasher, data, len);
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

/* input.c: opening a file, choosing its path, and finishing it */
void input_open(struct ring *r, struct input *in, unsigned index);
void input_finish(struct ring *r, struct input *in);
size_t block_length(const struct ring *r, const struct input *in, uint64_t block);

/* threaded.c: the producer thread and the consumer loop */
int hash_stream_threaded(struct ring *r);

/* pread_loop.c: plain pread(), for b3sum_pread and for uring_b3sum without io_uring */
int hash_stream_pread(struct ring *r);

/* trace.c */
int trace_open(struct trace *t, const char *path);
int trace_close(struct trace *t);
void trace_consumer_run(struct trace *t, unsigned in_flight, unsigned reaped,
			unsigned blocks_hashed, uint64_t bytes_hashed, unsigned peak_in_flight);
#ifdef RINGSUM_NO_TRACE
static inline bool trace_on(const struct trace *t) { (void)t; return false; }
#else
static inline bool trace_on(const struct trace *t) { return t->out != NULL; }
#endif

/* progress.c */
void progress_init(struct progress *p, const struct options *opts);
void progress_draw(struct progress *p, uint64_t bytes, unsigned files);
void progress_hide(struct progress *p, bool on_stderr);
void progress_unhide(struct progress *p);
void progress_end(struct progress *p);

/* After each block hashed and each file finished: a compare when off, a coarse clock read when on. */
static inline void progress_tick(struct ring *r)
{
	if (r->progress.on)
		progress_draw(&r->progress, r->bytes_hashed + r->progress.memory_bytes, r->consumer_input);
}

/* output.c */
void print_hash(const struct output_format *f, const char *path, blake3_hasher *hasher);
void print_error(const char *prog, const char *path, int err);
void print_line_error(const char *prog, int err);
void print_check(const char *shown, const char *verdict);
void print_check_failure(const char *shown, int err);
const char *ringsum_strerror(int err);
const char *describe_error(int err, char *buf, size_t size);
bool utf8_valid(const char *s, size_t len);

/* source.c: the inputs, one at a time: the FILEs (walked with --recursive), or the lines of the checksum files with --check */
struct walk_level {
	char *names;			/* each entry: 'd' or 'f', then its name and a NUL */
	size_t names_size;
	size_t *entries;		/* where each entry starts in names, in walk order */
	size_t entries_size, nr_entries, next;
	size_t path_len;		/* of the directory's path in walk.path, with its '/' */
};

struct walk {
	struct walk_level *levels;	/* the directories being walked, outermost first */
	size_t depth, capacity;
	char *path;			/* the directory's path under walk, then the entry's name */
	size_t path_size;
};

struct source {
	char **files;
	int nr_files, next_file;
	bool check;
	bool recursive;			/* a directory among the FILEs is walked */
	struct walk walk;
	FILE *checkfile;		/* the one being read, or NULL */
	char *line;
	size_t capacity;
	int fatal;			/* negative: it stopped everything, as b3sum's "Error: ..." */
};
int source_next(struct source *s, struct input *in);
void source_close(struct source *s);
void input_free(struct input *in);

/* main.c */
int ringsum_main(int argc, char **argv, const struct variant *v);

#endif
