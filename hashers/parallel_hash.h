/* SPDX-License-Identifier: MIT */
/* parallel_hash.cpp's entry points, for the C core: BLAKE3 on every core through TBB. */
#ifndef RINGSUM_PARALLEL_HASH_H
#define RINGSUM_PARALLEL_HASH_H

#include <stdbool.h>
#include <stddef.h>

#include "blake3.h"

#ifdef __cplusplus
#define PARALLEL_HASH_NOEXCEPT noexcept
extern "C" {
#else
#define PARALLEL_HASH_NOEXCEPT
#endif

/* How each task of a mapped file, or of a ring block, meets the cache before it is hashed. */
enum staging {
	STAGE_IN_PLACE,		/* hashed as it is */
	STAGE_READ_ONCE,	/* read once, a load per cache line, then hashed in place */
	STAGE_COPY,		/* copied into a per-thread buffer and hashed there */
	STAGE_PREFETCH,		/* hashed as it is, each SIMD batch's chunk heads prefetched a batch ahead */
	STAGE_MEASURED,		/* a half of each of the first tasks in place, a half prefetched; the faster kept */
};
/* blake3_hasher_update_tbb() forking no finer than pays on this length: a ring block, its tasks staged
 * in place or prefetched, or measured (STAGE_MEASURED: the ring blocks' trial). */
void hash_parallel(blake3_hasher *hasher, const void *data, size_t len, enum staging how) PARALLEL_HASH_NOEXCEPT;
/* blake3_hasher_update() on this thread, prefetched if how says so or the ring blocks' trial found it faster. */
void hash_serial(blake3_hasher *hasher, const void *data, size_t len, enum staging how) PARALLEL_HASH_NOEXCEPT;
/* Which data a staging trial measures: a cached file's mapping, or the ring's blocks (each its own trial). */
enum trial_of { TRIAL_MAPPED, TRIAL_RING };
/* What a staging trial (STAGE_MEASURED) found so far, for --verbose and --effective. */
struct staging_trial {
	bool decided;
	enum staging winner;	/* once decided: STAGE_IN_PLACE or STAGE_PREFETCH */
	unsigned pairs;		/* pairs of tasks the median is over */
	double ratio;		/* prefetched time per byte over in place's, the median of the pairs */
	unsigned prefetch_wins;	/* pairs in which prefetching was the faster */
	double cost_ns;		/* CPU time the trial's tasks took beyond the winner's rate, over every thread */
	unsigned long long tasks;	/* tasks hashed while measuring */
	unsigned trials;		/* trials decided: the first, and each one again since (RETRIAL_TASKS) */
};
void staging_trial_result(enum trial_of which, struct staging_trial *out) PARALLEL_HASH_NOEXCEPT;
/* Test builds (faults.c): called before each task of a mapped file or a ring block is hashed (or each
 * half, in place or prefetched), with its staging. */
void staging_set_task_hook(void (*hook)(enum staging how, size_t len)) PARALLEL_HASH_NOEXCEPT;
/* The same for a mapping of the page cache, in tasks of at most stage bytes, each staged as said. */
void hash_mapped(blake3_hasher *hasher, const void *data, size_t len, size_t stage, enum staging how,
		 size_t release) PARALLEL_HASH_NOEXCEPT;
/* --num-threads: no more hashing threads than this. */
void hash_limit_threads(size_t threads) PARALLEL_HASH_NOEXCEPT;
/* parallel_load.c's: the directory the running program is in (its /proc/self/exe), in dir; 0 or -errno. */
int program_dir(char *dir, size_t size) PARALLEL_HASH_NOEXCEPT;
/* How many threads a parallel hash can run on: the cores this process may use, under --num-threads
 * (parallel_load.c's, TBB not started). */
size_t hash_max_threads(void) PARALLEL_HASH_NOEXCEPT;
/* A block below this is hashed in place while no trial has a winner: hash_ring()'s MIN_RING_PAIR. */
#define HASH_TRIAL_MIN (128u << 10)

#ifdef __cplusplus
}
#endif

#endif
