/* SPDX-License-Identifier: MIT */
/*
 * The ring's two sides sleeping and waking each other: only the multithreaded
 * variant ever sleeps. The producer sleeps on an eventfd (ring.c, which knows
 * what it waits for), the consumer on a futex, for a time that is the window's
 * measure (ring_consume.c).
 */
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
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
		syscall(SYS_futex, &r->consumer_wakeups, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
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

uint64_t ring_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The time asleep is the window's measure of the reads (ring_consume.c). */
void ring_consumer_sleep(struct ring *r)
{
	uint32_t seen = atomic_load(&r->consumer_wakeups);
	uint64_t start;

	atomic_store(&r->consumer_sleeping, true);
	if (!ring_consumed_all(r) && cell_state(cell_of(r, r->consumer_head)) != CELL_AVAILABLE &&
	    !atomic_load(&r->error)) {
		start = r->window.measured ? ring_clock_ns() : 0;
		syscall(SYS_futex, &r->consumer_wakeups, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		if (start)
			r->window.waited_ns += ring_clock_ns() - start;
	}
	atomic_store(&r->consumer_sleeping, false);
}
