/* SPDX-License-Identifier: MIT */
/* The multithreaded loop: a producer thread keeps reads in flight while the caller hashes. */
#include <pthread.h>
#include <sched.h>

#include "ringsum.h"

/*
 * The producer never waits on the completion queue itself: with every cell
 * available and nothing in flight, no completion would ever come. It sleeps
 * on an eventfd that both completions and the consumer's releases signal.
 */
static void *producer(void *arg)
{
	struct ring *r = arg;
	int ret = 0, progress;

	while (!atomic_load(&r->error) && (!ring_produced_all(r) || ring_in_flight(r) > 0)) {
		if (r->cfg->consumer_spins)
			atomic_store_explicit(&r->producer_cpu, sched_getcpu(), memory_order_relaxed);
		progress = ret = ring_request(r);
		if (ret >= 0)
			ret = ring_submit(r, false);
		while (ret >= 0 && (ret = ring_reap_one(r, false)) > 0)
			progress++;
		if (ret < 0) {
			ring_fail(r, ret);
			break;
		}
		if (!progress)
			ring_producer_sleep(r);
	}
	ring_drain(r);
	return NULL;
}

int hash_stream_threaded(struct ring *r)
{
	pthread_t thread;
	int ret;

	/* until it runs: as if on this core */
	atomic_store_explicit(&r->producer_cpu, sched_getcpu(), memory_order_relaxed);
	ret = pthread_create(&thread, NULL, producer, r);
	if (ret)
		return -ret;
	while (!ring_consumed_all(r) && !atomic_load(&r->error)) {
		if (!ring_consume(r))
			ring_consumer_sleep(r);
	}
	pthread_join(thread, NULL);
	return atomic_load(&r->error);
}
