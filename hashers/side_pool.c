/* SPDX-License-Identifier: MIT */
/*
 * Whole small files side by side (ring_consume.c): each its own hasher, so
 * each a job for whichever thread takes it, the consumer's or a helper's.
 *
 * TBB did this first, and a run that tried it paid 1.5-2 ms on the Zen 5
 * (libstdc++ and TBB loaded and relocated, their threads started): 512 cached
 * files of 64 KiB took 8.1 ms, against 6.3 with --serial-hash. Here the
 * helpers are plain threads started when first needed (6.3 ms), and between
 * batches each yields its core for a while, to the producer if it is there,
 * before it sleeps: asleep at once, each batch cost the producer a wakeup on
 * its core, and the tree side by side took 1.02-1.04x the time one by one,
 * against 1.00 yielding first (docs/cold-path/side-pool-zen5).
 *
 * A batch is published in its cursor (its number, its next job). The cursor
 * is closed while the consumer writes a batch's jobs, and a helper that wakes
 * late finds another batch's number there: it takes nothing, so no job is
 * hashed twice. The consumer returns once every job of its batch is done.
 */
#include <sched.h>
#include <stdlib.h>

#include "ringsum.h"

/* The consumer spins this long for the helpers' last jobs before it sleeps. */
#define DONE_SPIN_NS 20000
/* A helper yields its core this long for the next batch before it sleeps. */
#define HELPER_YIELD_NS 50000
#define CURSOR_CLOSED UINT32_MAX

/* The next job of this batch, if it has one left, and the batch's size. */
static bool claim(struct side_pool *p, uint32_t batch, size_t *job, size_t *n)
{
	uint64_t cursor = atomic_load(&p->cursor);

	do {
		/* acquire: a count written for the next batch comes with its closed cursor, and the swap fails */
		*n = atomic_load_explicit(&p->nr_jobs, memory_order_acquire);
		if ((uint32_t)(cursor >> 32) != batch || (cursor & UINT32_MAX) >= *n)
			return false;
	} while (!atomic_compare_exchange_weak(&p->cursor, &cursor, cursor + 1));
	*job = cursor & UINT32_MAX;
	return true;
}

static void hash_jobs(struct side_pool *p, uint32_t batch)
{
	size_t i, n;

	while (claim(p, batch, &i, &n)) {
		const struct hash_job *job = &atomic_load_explicit(&p->jobs, memory_order_acquire)[i];

		blake3_hasher_update(job->hasher, job->data, job->len);
		if (atomic_fetch_add(&p->done, 1) + 1 == n && atomic_exchange(&p->consumer_waiting, 0))
			futex_wake(&p->consumer_waiting, 1);
	}
}

static void *helper(void *arg)
{
	struct side_pool *p = arg;
	uint32_t seen = 0, batch;

	for (;;) {
		uint64_t until = ring_clock_ns() + HELPER_YIELD_NS;

		while ((batch = atomic_load(&p->batch)) == seen && ring_clock_ns() < until)
			sched_yield();
		while ((batch = atomic_load(&p->batch)) == seen)
			futex_wait(&p->batch, seen);
		seen = batch;
		if (atomic_load(&p->stopping))
			return NULL;
		hash_jobs(p, batch);
	}
}

void side_pool_start(struct side_pool *p, unsigned threads)
{
	unsigned want = threads > 1 ? threads - 1 : 0;

	if (p->started)
		return;
	p->started = true;
	if (!want || !(p->threads = calloc(want, sizeof(*p->threads))))
		return;
	while (p->helpers < want && !pthread_create(&p->threads[p->helpers], NULL, helper, p))
		p->helpers++;
}

void side_pool_hash(struct side_pool *p, const struct hash_job *jobs, size_t n)
{
	uint32_t batch = atomic_load(&p->batch) + 1;
	uint64_t until;

	atomic_store(&p->cursor, (uint64_t)batch << 32 | CURSOR_CLOSED);
	atomic_store_explicit(&p->jobs, jobs, memory_order_release);
	atomic_store_explicit(&p->nr_jobs, n, memory_order_release);
	atomic_store(&p->done, 0);
	atomic_store(&p->cursor, (uint64_t)batch << 32);
	atomic_store(&p->batch, batch);
	if (p->helpers && n > 1)
		futex_wake(&p->batch, (int)(p->helpers < n - 1 ? p->helpers : n - 1));
	hash_jobs(p, batch);
	until = ring_clock_ns() + DONE_SPIN_NS;
	while (atomic_load(&p->done) < n && ring_clock_ns() < until)
		cpu_relax();
	while (atomic_load(&p->done) < n) {
		atomic_store(&p->consumer_waiting, 1);
		if (atomic_load(&p->done) < n)
			futex_wait(&p->consumer_waiting, 1);
	}
	atomic_store(&p->consumer_waiting, 0);
}

void side_pool_stop(struct side_pool *p)
{
	atomic_store(&p->stopping, true);
	atomic_fetch_add(&p->batch, 1);
	if (p->helpers)
		futex_wake(&p->batch, INT32_MAX);
	for (unsigned i = 0; i < p->helpers; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	p->threads = NULL;
	p->helpers = 0;
}
