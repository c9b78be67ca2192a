/* SPDX-License-Identifier: MIT */
/*
 * The ring's two sides sleeping and waking each other: only the multithreaded
 * variant ever sleeps. The producer sleeps on an eventfd (ring.c, which knows
 * what it waits for), the consumer on a futex, uring_b3sum's after spinning a
 * while; the time it waits is the window's measure (ring_consume.c).
 */
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ringsum.h"

/* The consumer's, after each cell it releases (ring_consume.c). */
void ring_wake_producer(struct ring *r)
{
	if (r->eventfd >= 0 && atomic_load(&r->producer_sleeping))
		eventfd_write(r->eventfd, 1);
}

/* The producer's, after each cell it makes available (ring.c). */
void ring_wake_consumer(struct ring *r)
{
	if (atomic_load(&r->consumer_sleeping)) {
		atomic_fetch_add(&r->consumer_wakeups, 1);
		futex_wake(&r->consumer_wakeups, 1);
	}
}

void ring_fail(struct ring *r, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&r->error, &none, err);
	ring_wake_consumer(r);
	if (r->eventfd >= 0)
		eventfd_write(r->eventfd, 1);
}

/*
 * Many small cached files: the producer opens and reads each while the
 * consumer hashes the one before, a few microseconds apiece, so the consumer
 * waits often, briefly. Asleep, each wait costs a futex wake, and the kernel
 * may wake it on the producer's core, where the two then take turns while the
 * other core idles: the Zen 5's cached 16,384 x 64 KiB tree (-r) took 0.93-0.94
 * of the time with the consumer spinning up to CONSUMER_SPIN_NS first, runs of
 * 2,472 of its files under a shell that had just started 0.65-0.67
 * (docs/cold-path/consumer-spin-zen5). So it spins while the producer is
 * awake on another core; not while the producer sleeps on its eventfd (for
 * the device, or for a cell), nor on the producer's own core, where the spin
 * would only keep the producer off it (with a busy loop on the other core,
 * spinning on any core cost 4-6%). A producer blocked in an open or a read
 * counts as awake: the spin's bound is for it.
 */
#define CONSUMER_SPIN_NS 50000

static bool head_ready(struct ring *r)
{
	return ring_consumed_all(r) || cell_state(cell_of(r, r->consumer_head)) == CELL_AVAILABLE ||
	       atomic_load(&r->error);
}

/* Moved onto the consumer's core, the producer would wait for the spin to end. */
static bool producer_elsewhere(struct ring *r)
{
	return atomic_load_explicit(&r->producer_cpu, memory_order_relaxed) != sched_getcpu();
}

/* Whether the head cell came while spinning; r->consumer_spun counts the spins. */
static bool consumer_spin(struct ring *r)
{
	uint64_t until;

	if (!r->cfg->consumer_spins || !producer_elsewhere(r))
		return false;
	r->consumer_spun++;
	until = ring_clock_ns() + CONSUMER_SPIN_NS;
	while (!atomic_load(&r->producer_sleeping) && producer_elsewhere(r) && ring_clock_ns() < until) {
		if (head_ready(r))
			return true;
		cpu_relax();
	}
	return head_ready(r);
}

/* The time waited, spun or asleep, is the window's measure of the reads (ring_consume.c). */
void ring_consumer_sleep(struct ring *r)
{
	uint64_t start = r->window.measured ? ring_clock_ns() : 0;
	uint32_t seen;

	r->consumer_waits++;
	if (!consumer_spin(r)) {
		r->consumer_slept++;
		seen = atomic_load(&r->consumer_wakeups);
		atomic_store(&r->consumer_sleeping, true);
		if (!head_ready(r))
			futex_wait(&r->consumer_wakeups, seen);
		atomic_store(&r->consumer_sleeping, false);
	}
	if (start)
		r->window.waited_ns += ring_clock_ns() - start;
}

/* --verbose, at the end: how the consumer waited. */
void ring_say_waits(const struct ring *r)
{
	if (!r->cfg->consumer_spins || !r->have_uring || !r->consumer_waits)
		return;
	fprintf(stderr, "%s: the hashing waited for the next block %u times: %u spinning first (up to %u us, the "
		"producer busy on another core), %u asleep in the end\n", r->cfg->prog, r->consumer_waits,
		r->consumer_spun, CONSUMER_SPIN_NS / 1000, r->consumer_slept);
}
