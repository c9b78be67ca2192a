/* SPDX-License-Identifier: MIT */
/*
 * The ring's knobs, declared once. struct knobs, the long options, their --help
 * lines, parsing, range checks and --knobs-json (from which the harness builds its
 * config schema, commands, records and tune space) are all generated from these
 * two tables: a new knob is a row here and the code where it acts.
 *
 * NUMBER(name, type, short, needs, default, min, max, label, positional, arg, noun, unit, too_large, help)
 *	type: SIZE (bytes with an optional K, M or G suffix), COUNT (a whole number) or
 *	      BUFFERS (a count whose default is a multiple of the queue depth)
 *	default: the article's; a variant may have its own (struct variant)
 *	noun, unit, too_large: the words of the range errors, "<noun> must be at least
 *	      <min> <unit>" and "<noun> <value> <too_large>"
 * FLAG(name, short, needs, label, positional, help): off unless given
 *
 *	short: its one-letter option, or 0
 *	needs: what a variant must have for the knob to act (ALL, URING: an io_uring
 *	      ring, WAITS: a loop that waits on completions, MEMORY: the path that hashes
 *	      a cached file from memory); other variants check it, then ignore it
 *	label: its word in a benchmark command's label (before "=" for numbers)
 *	positional: its place among the article's seven numbers, 0 for none
 */
#ifndef RINGSUM_KNOBS_H
#define RINGSUM_KNOBS_H

#include <stdbool.h>
#include <stddef.h>

#define RINGSUM_NUMBERS(NUMBER) \
	NUMBER(block_size, SIZE, 'b', ALL, 512u << 10, 1, MAX_BLOCK_SIZE, "bs", 1, "SIZE", \
	       "the block size", "byte", "is larger than the 1G maximum", \
	       "bytes per read and per buffer, K/M/G suffixes") \
	NUMBER(queue_depth, COUNT, 'q', URING, 4, 1, MAX_QUEUE_DEPTH, "qd", 2, "N", \
	       "the queue depth", "", "exceeds the kernel limit of 32768 (IORING_MAX_ENTRIES)", \
	       "limit on unfinished read requests\n" \
	       "uring_b3sum's, no buffers or window given: 4 times it (no more\n" \
	       "bytes) once O_DIRECT reads wait on the device") \
	NUMBER(buffers, BUFFERS, 'n', URING, 0, 1, UINT32_MAX, "buf", 5, "N", \
	       "the ring's buffer count", "buffer", "is more than 32 bits hold", \
	       "buffers in the ring\n" \
	       "uring_b3sum's, no depth or window given: twice as many, half in use\n" \
	       "until the queue deepens") \
	NUMBER(window, COUNT, 0, URING, 0, 0, UINT32_MAX, "win", 0, "N", \
	       "the window", "block", "is more than 32 bits hold", \
	       "blocks read ahead of the hashing, at most, each into the buffer freed last\n" \
	       "0: every buffer; uring_b3sum's: 12M (3 blocks of 4M) at first\n" \
	       "and every buffer once the hashing waits for the reads\n" \
	       "(2/3 of the first 8 blocks' time, or 1/2 twice in a row)") \
	NUMBER(direct_min, SIZE, 0, ALL, 0, 0, MAX_BLOCK_SIZE, "dmin", 0, "SIZE", \
	       "the smallest O_DIRECT file", "byte", "is larger than the 1G maximum", \
	       "uring_b3sum: O_DIRECT for a cold file of a block or SIZE or more\n" \
	       "(cold: under 3/4 in the page cache); 0: a block, 4K under --recursive") \
	NUMBER(stage_size, SIZE, 0, MEMORY, 1u << 20, MIN_STAGE_SIZE, MAX_STAGE_SIZE, "stage", 0, "SIZE", \
	       "the stage size", "bytes", "is larger than the 64M maximum", \
	       "bytes per task hashing a cached file from memory, at most\n" \
	       "a power of two (others round down)\n" \
	       "each task hashed in place or prefetched, whichever the first tasks\n" \
	       "measure faster (or forced: --in-place, --prefetch, --read-once;\n" \
	       "or copied: --stage-copy)") \
	NUMBER(map_release, SIZE, 0, MEMORY, 8u << 20, 0, MAX_BLOCK_SIZE, "release", 0, "SIZE", \
	       "the release size", "bytes", "is larger than the 1G maximum", \
	       "a cached file's mapping is released in pieces of SIZE as each is hashed\n" \
	       "(peak RSS: a few pieces, not the file)\n" \
	       "a power of two (others round down), 64K at least; 0: all at the end") \
	NUMBER(memory_min, SIZE, 0, MEMORY, 1280u << 10, 16u << 10, MAX_BLOCK_SIZE, "mmin", 0, "SIZE", \
	       "the smallest file hashed from memory", "bytes", "is larger than the 1G maximum", \
	       "uring_b3sum: a cached file of SIZE or more is hashed from memory\n" \
	       "a smaller one is read through the ring: mapping costs more than a copy")

#define RINGSUM_FLAGS(FLAG) \
	FLAG(direct, 'd', ALL, "direct", 3, "read with O_DIRECT; SIZE must be a multiple of 4096") \
	FLAG(process_in_inner_loop, 0, WAITS, "inner", 4, "hash after every reaped completion") \
	FLAG(drain, 0, URING, "drain", 6, "set IOSQE_IO_DRAIN on every read") \
	FLAG(link, 0, URING, "link", 7, "chain the reads of each submission with IOSQE_IO_LINK") \
	FLAG(fixed_buffers, 0, URING, "fixedbuf", 0, "register the buffers, read with READ_FIXED") \
	FLAG(fixed_file, 0, URING, "fixedfile", 0, "register the file, read with IOSQE_FIXED_FILE") \
	FLAG(sqpoll, 0, URING, "sqpoll", 0, "IORING_SETUP_SQPOLL: a kernel thread submits") \
	FLAG(submit_and_wait, 0, WAITS, "submitwait", 0, "submit and wait in one system call; single-threaded loop") \
	FLAG(iopoll, 0, URING, "iopoll", 0, "IORING_SETUP_IOPOLL: poll the device for completions\n" \
	     "needs --direct, a pollable device and the single-threaded loop") \
	FLAG(parallel_hash, 0, ALL, "parhash", 0, "hash every block on every core, BLAKE3's TBB path\n" \
	     "best with large power-of-two blocks\n" \
	     "uring_b3sum's default: a block on every core once the next one is read") \
	FLAG(serial_hash, 0, ALL, "serial", 0, "hash every block of the ring on one core\n" \
	     "uring_b3sum's default: on one core only while the reads are behind") \
	FLAG(fadvise_sequential, 0, ALL, "seq", 0, "POSIX_FADV_SEQUENTIAL on buffered reads: doubles readahead") \
	FLAG(buffered, 0, ALL, "buffered", 0, "never O_DIRECT, not even for uring_b3sum's cold files\n" \
	     "(its default for a cold file of --direct-min or more)") \
	FLAG(dontcache, 0, ALL, "dontcache", 0, "RWF_DONTCACHE on buffered reads (Linux 6.14+)\n" \
	     "pages leave the page cache once copied") \
	FLAG(huge_pages, 0, ALL, "huge", 0, "buffers on 2M transparent huge pages\n" \
	     "an O_DIRECT request is then a few segments, not one per 4K page") \
	FLAG(stage_copy, 0, MEMORY, "copy", 0, "from memory, hash each task from a per-thread copy, not in place") \
	FLAG(read_once, 0, MEMORY, "readonce", 0, "from memory, read each task once, a load per cache line, then hash it\n" \
	     "(forced: no trial)") \
	FLAG(in_place, 0, MEMORY, "inplace", 0, "hash each task as it is, with no read first: a cached file's\n" \
	     "from memory, and the ring's blocks (forced: no trial of prefetching)") \
	FLAG(prefetch, 0, MEMORY, "prefetch", 0, "hash each task as it is, prefetching ahead: a cached file's\n" \
	     "from memory, and the ring's blocks; each SIMD batch prefetches the\n" \
	     "next one's chunk heads (forced: no trial of in place)")

typedef size_t knob_SIZE_t;
typedef unsigned knob_COUNT_t;
typedef unsigned knob_BUFFERS_t;

struct knobs {
#define KNOB_NUMBER_FIELD(name, type, ...) knob_##type##_t name;
#define KNOB_FLAG_FIELD(name, ...) bool name;
	RINGSUM_NUMBERS(KNOB_NUMBER_FIELD)
	RINGSUM_FLAGS(KNOB_FLAG_FIELD)
#undef KNOB_NUMBER_FIELD
#undef KNOB_FLAG_FIELD
};

enum knob_type { KNOB_SIZE, KNOB_COUNT, KNOB_BUFFERS, KNOB_FLAG };
enum knob_needs { KNOB_NEEDS_ALL, KNOB_NEEDS_URING, KNOB_NEEDS_WAITS, KNOB_NEEDS_MEMORY };

/* One row of either table, for the code that walks them (options.c). */
struct knob {
	const char *name;		/* the field's, and the config key's */
	enum knob_type type;
	int short_name;
	enum knob_needs needs;
	unsigned long long def, min, max;
	const char *label;
	int positional;
	const char *arg, *noun, *unit, *too_large, *help;
	size_t offset;			/* of its field in struct knobs */
};

#endif
