/* SPDX-License-Identifier: MIT */
/*
 * side_pool_stress [CPU_SECONDS]: hashers/side_pool.c against a stand-in for
 * BLAKE3 that counts, per job, how often it ran and which batch's data it saw.
 * Pools of 1-6 threads hash batches of 0-16 jobs, some slow, some batches
 * apart long enough for the helpers to sleep, batch numbers wrapping, pools
 * stopped twice or never started; the caller reuses its buffers as soon as a
 * batch returns. Every job must run exactly once, on its own batch's data.
 * Prints "batches B pools P bad N" and exits 1 if N > 0.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringsum.h"

#define MOST_JOBS 16

static blake3_hasher hashers[MOST_JOBS];
static uint64_t buffers[MOST_JOBS][4];
static _Atomic unsigned runs[MOST_JOBS];
static uint64_t seen[MOST_JOBS];
static unsigned slow[MOST_JOBS];

/* The stand-in: the job is told by its hasher, each job's own. */
void blake3_hasher_update(blake3_hasher *hasher, const void *input, size_t input_len)
{
	size_t i = (size_t)(hasher - hashers);

	(void)input_len;
	atomic_fetch_add(&runs[i], 1);
	seen[i] = ((const uint64_t *)input)[0];
	if (slow[i] == 1) {
		sched_yield();
	} else if (slow[i] == 2) {
		struct timespec pause = { 0, 30000 };

		nanosleep(&pause, NULL);
	}
}

static unsigned next_random(void)
{
	static unsigned state = 12345;

	state = state * 1103515245 + 12345;
	return state >> 8;
}

static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static unsigned long run_batches(struct side_pool *p, unsigned pool, unsigned batches)
{
	struct hash_job jobs[MOST_JOBS];
	unsigned long bad = 0;

	for (unsigned b = 0; b < batches; b++) {
		size_t n = next_random() % (MOST_JOBS + 1);
		uint64_t tag = (uint64_t)pool << 32 | b;

		for (size_t i = 0; i < n; i++) {
			unsigned r = next_random() % 64;

			buffers[i][0] = tag;
			atomic_store(&runs[i], 0);
			seen[i] = 0;
			slow[i] = r == 0 ? 2 : r < 4 ? 1 : 0;
			jobs[i] = (struct hash_job){ &hashers[i], buffers[i], sizeof(buffers[i]) };
		}
		side_pool_hash(p, jobs, n);
		for (size_t i = 0; i < n; i++) {
			if (atomic_load(&runs[i]) != 1 || seen[i] != tag) {
				fprintf(stderr, "pool %u batch %u job %zu: ran %u times, saw %llx\n", pool, b, i,
					atomic_load(&runs[i]), (unsigned long long)seen[i]);
				bad++;
			}
			buffers[i][0] = ~0ull;	/* released: reused at once */
		}
		if (next_random() % 50 == 0)
			usleep(100 + next_random() % 200);	/* the helpers fall asleep */
	}
	return bad;
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 2;
	unsigned long batches = 0, bad = 0;
	unsigned pools = 0;

	for (; cpu_seconds() < budget; pools++) {
		struct side_pool p;
		unsigned n = 1 + next_random() % 2000;

		memset(&p, 0, sizeof(p));
		if (pools % 3 == 0) {	/* never started */
			side_pool_stop(&p);
			continue;
		}
		if (pools % 5 == 1)
			atomic_store(&p.batch, UINT32_MAX - 3);	/* the batch number wraps */
		side_pool_start(&p, 1 + next_random() % 6);
		bad += run_batches(&p, pools, n);
		batches += n;
		side_pool_stop(&p);
		side_pool_stop(&p);
	}
	printf("batches %lu pools %u bad %lu\n", batches, pools, bad);
	return bad ? 1 : 0;
}
