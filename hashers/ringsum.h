/* SPDX-License-Identifier: MIT */
/* ringsum core: options, variants, trace, progress and output shared by every hasher; the ring in ring.h. */
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
#include "parallel_hash.h"

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
	ERR_EMPTY_NAME,			/* --files0-from: two NULs in a row name no file */
	ERR_STDIN_IS_LIST,		/* --files0-from -: a name "-" there cannot be stdin too */
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
struct name_list;

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
	bool no_wisdom;			/* --no-wisdom: no measured choices (wisdom.c) */
	bool wisdom_key;		/* --wisdom-key: print what a record for the first FILE is keyed by */
	bool progress;			/* --progress: bytes, files, rate and time left on stderr, a terminal */
	int path_choice;		/* PATH_AUTO, PATH_MEMORY or PATH_RING */
	bool path_given;
	bool depth_grows;		/* uring_b3sum's queue depth and buffers, neither given: they grow (ring.c) */
	uint64_t given;			/* bit i: knob_table[i] was given (options.c) */
	char defaults_text[4096];	/* uring_b3sum's options file; option values point into it */
	const char *trace_path;		/* CSV of consumer runs, or NULL */
	const char *effective_path;	/* JSON lines: how each file was really read, or NULL */
	bool effective_summary;		/* ... a line per distinct way (--effective-summary), not per file */
	const char *files0_from;	/* --files0-from: the names come from this file ("-": stdin), not argv */
	struct name_list *list;		/* ... opened by parse_options(), closed by the caller */
	char **files;
	int nr_files;
};

/* Many files: a tree, a list (xargs, --files0-from), a checksum file, or several FILEs. */
static inline bool many_files(const struct options *opts)
{
	return opts->recursive || opts->check || opts->list || opts->nr_files > 1;
}

/*
 * A hasher variant, declared once in its own file, hashers/variants/<program>.c,
 * with RINGSUM_VARIANT(): the Makefile builds a program of each file there and
 * lists it in share/ringsum/variants; --knobs-json reports the description
 * ("variant_info"), from which the harness and the tests take what they need.
 */
struct variant {
	/* what it is, for the harness (--knobs-json) */
	const char *name;		/* the program: its file's name, given by the Makefile */
	const char *summary;		/* one line, its man page's NAME */
	enum article_loop { ARTICLE_NONE, ARTICLE_SINGLETHREAD, ARTICLE_MULTITHREAD } article;
	bool positional_flag;		/* takes the article's form only after --positional: its arguments are b3sum's */
	bool parallel;			/* reads and hashes at once, on every core (the harness's duration estimate) */
	bool counted;			/* `ringsum check` counts its instructions: a steady single-threaded hash */
	const char *defaults_file;	/* its options file in ~/.config/ringsum/ (`ringsum tune --install`), or NULL */
	/* how the core runs it */
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
	bool adapts_window;		/* measures how far the reads run ahead of the hashing (ring_consume.c) */
	bool consumer_spins;		/* its consumer spins a while for the next cell before it sleeps (ring_wake.c) */
	int (*hash_stream)(struct ring *ring);
};

/*
 * The variant and its main(). RINGSUM_PROGRAM, the file's name as a string,
 * comes from the Makefile; the stream loop is an argument of its own so that
 * the fuzzer's table of variants (made from these lines) can leave it out.
 */
#define RINGSUM_VARIANT(stream, ...)						\
	static const struct variant variant = {					\
		.name = RINGSUM_PROGRAM, .hash_stream = stream, __VA_ARGS__	\
	};									\
	int main(int argc, char **argv)						\
	{									\
		return ringsum_main(argc, argv, &variant);			\
	}

enum path_choice { PATH_AUTO, PATH_MEMORY, PATH_RING };

struct trace {
	FILE *out;
};

/* --effective and --effective-summary (effective.c): the way a file was really read. */
struct effective_choice {
	const char *path;		/* memory, pread, stream or ring */
	size_t block_size;
	int queue_depth;		/* -1: the pread loop has none */
	unsigned buffers;
	const char *direct;		/* as JSON: true, false or "mixed" */
	bool huge_pages;
	const char *hashing;		/* serial, parallel, when-behind or beside */
	unsigned hash_threads;
	const char *staging;
};

struct effective_file {
	struct effective_choice how;
	unsigned index;			/* its place in the list */
	const struct staging_trial *trial;	/* its trial's finding, or NULL: a staging given, or undecided */
	uint64_t ring_bytes, parallel_bytes, cached_blocks;
};

struct effective {
	FILE *out;			/* NULL: not asked for */
	bool summary;			/* a line per distinct way at the end, not one per file */
	int error;			/* -errno: the summary could not be kept */
	struct effective_sum *sums;
	unsigned nr, cap;
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

/* the option unit (options_impl.h inside): options.c and knob_table.c */
int parse_options(struct options *opts, int argc, char **argv, const struct variant *v);
void knobs_for_variant(struct knobs *k, const struct variant *v);

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

/* effective.c */
int effective_open(struct effective *e, const char *path, bool summary);
void effective_add(struct effective *e, const struct effective_file *f);
int effective_close(struct effective *e);

/* progress.c */
void progress_init(struct progress *p, const struct options *opts);
void progress_draw(struct progress *p, uint64_t bytes, unsigned files);
void progress_hide(struct progress *p, bool on_stderr);
void progress_unhide(struct progress *p);
void progress_end(struct progress *p);

/* output.c */
void print_hash(const struct output_format *f, const char *path, blake3_hasher *hasher);
void print_error(const char *prog, const char *path, int err);
void print_line_error(const char *prog, int err);
void print_check(const char *shown, const char *verdict);
void print_check_failure(const char *shown, int err);
const char *ringsum_strerror(int err);
const char *describe_error(int err, char *buf, size_t size);
/* utf8.c */
size_t utf8_sequence(const unsigned char *s, size_t left, size_t *bad);
bool utf8_valid(const char *s, size_t len);

/* main.c */
int ringsum_main(int argc, char **argv, const struct variant *v);

#include "ring.h"

#endif
