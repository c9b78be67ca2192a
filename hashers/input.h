/* SPDX-License-Identifier: MIT */
/* One file to hash, and where the files come from: the FILEs, the walked directories, the checksum files. */
#ifndef RINGSUM_INPUT_H
#define RINGSUM_INPUT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "blake3.h"

struct ring;

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
	bool mixed;			/* partly cached: each block from the page cache if all there, else direct_fd */
	int direct_fd;			/* mixed: the same file opened again with O_DIRECT, or -1 */
	bool probe_by_reading;		/* mixed: cachestat() refused this reader; each block's pages probed */
	uint64_t cached_blocks;		/* mixed: the producer's count of blocks read from the page cache */
	int rw_flags;			/* preadv2()'s flags for its reads: RWF_DONTCACHE or 0 */
	struct stat st;			/* at open: the file must still match it when done */
	uint64_t size;			/* bytes to read (a block device's from BLKGETSIZE64) */
	uint64_t nr_blocks;		/* at least 1: an empty or failed file still passes the consumer once */
	uint64_t completions;		/* reaped for this file, counted by fault injection */
	int error;			/* first error, negative; the producer's until the file's last block is available */
	bool from_memory;		/* hash it from the page cache instead of reading it */
	void *mapping;			/* of size bytes, while mapped beside others (ring_consume.c) */
	bool hashed_beside;		/* hashed from memory beside other files already */
	bool opened;			/* its path was chosen: --effective reports it once it is finished */
	bool end_seen;			/* its last read asked past its size and stopped there: no probe needed */
	uint64_t ring_bytes;		/* hashed from the ring's cells */
	uint64_t parallel_bytes;	/* of those, hashed on every core */
	unsigned fixed_slot;		/* its index among the registered files */
	blake3_hasher hasher;
};


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
	struct name_list *list;		/* --files0-from: the names come from it instead */
	size_t list_offset;		/* this source's place among the names the list kept */
	bool list_keeps;		/* the wisdom's sample: the names it reads are kept for the hashing */
	unsigned long list_number;	/* names taken from the list, for a bad one's message */
	bool check;
	bool recursive;			/* a directory among the FILEs is walked */
	struct walk walk;
	FILE *checkfile;		/* the one being read, or NULL */
	char *line;
	size_t capacity;
	int fatal;			/* negative: it stopped everything, as b3sum's "Error: ..." */
	bool list_failed;		/* ... reading the list of names */
};

/* file_list.c: --files0-from's list, read as the hashing needs it; its first names kept for the wisdom's look */
int name_list_open(struct name_list **list, const char *name);
const char *name_list_name(const struct name_list *list);
const char *name_list_first(struct name_list *list);
void name_list_close(struct name_list *list);

/* file_list.c: the next input, from the FILEs (walked with --recursive) or the lines of the checksum files with --check */
int source_next(struct source *s, struct input *in);
void source_close(struct source *s);
void input_free(struct input *in);

/* checksum_file.c: the next line of the checksum files, as an input to check; file_list.c calls it */
int next_check_line(struct source *s, struct input *in);

/* Room for need units of unit bytes in *buf, the capacity doubled as it grows (the walk's lists, an input's text). */
static inline int grow(void **buf, size_t *capacity, size_t need, size_t unit)
{
	size_t want = *capacity ? *capacity : 64;
	void *grown;

	if (need <= *capacity)
		return 0;
	while (want < need)
		want *= 2;
	grown = reallocarray(*buf, want, unit);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	*capacity = want;
	return 0;
}

static inline int grow_text(struct input *in, size_t size)
{
	return grow((void **)&in->text, &in->text_size, size, 1);
}

/* residency.c: how much of a file the page cache holds, by cachestat() or, refused, by reading */
enum cached { CACHED_NONE, CACHED_PART, CACHED_MOSTLY };	/* none, some, three quarters or more */
enum cached cache_state(int fd, uint64_t size);
bool mostly_cached(int fd, uint64_t size);
bool cachestat_answers(int fd);
bool range_cached(int fd, uint64_t offset, uint64_t length, bool by_reading);

/* input.c: opening a file, choosing its path, and finishing it; called by the ring, never calling it */
void input_open(struct ring *r, struct input *in, unsigned index);
void input_finish(struct ring *r, struct input *in);
/* mapping.c: hashing a cached file from its mapping, alone or beside others */
int input_hash_mapped(const struct ring *r, struct input *in);
int input_map(struct input *in);
void input_unmap(struct input *in);
void input_guard_mappings(void);
bool input_unguard_mappings(void);
size_t block_length(const struct ring *r, const struct input *in, uint64_t block);

#endif
