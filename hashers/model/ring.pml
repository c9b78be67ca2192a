/* SPDX-License-Identifier: MIT */
/* The ringsum ring-buffer protocol (hashers/ring.c and the variants) as a Promela model.
 *
 * Knobs (spin -DNAME=VALUE):
 *   DESIGN                 SINGLE, MULTI or MULTI_BLOCKING (the article's broken producer)
 *   QUEUE_DEPTH            limit on in_flight                          (default 2)
 *   BUFFERS                cells in the ring, at most 8                (default 2)
 *   BLOCKS                 blocks in the file, at most 254             (default 5)
 *   RETRIES                transient failures the kernel may inject in total (default 1)
 *   PROCESS_IN_INNER_LOOP  SINGLE only: consume after every reaped completion (default 0)
 *   WINDOW                 blocks the producer may request ahead of the consumer (default BUFFERS)
 *   GROWS                  the consumer may widen the window to BUFFERS at any release, once
 *   FIRST_CELLS            cells the producer may use until it deepens  (default BUFFERS)
 *   DEEPENS                (MULTI) the producer may deepen, once, before any sleep: every cell
 *                          and DEEP_DEPTH reads in flight (default QUEUE_DEPTH) from then on
 * Deliberate bugs, to show that the checks have teeth (each must make a check fail):
 *   BUG_REUSE_UNCONSUMED   the producer requests into any cell that is not REQUESTED, in its
 *                          old buffer when none is free
 *   BUG_RETRY_AVAILABLE    a transient failure is re-issued AND marked available
 *   BUG_DOUBLE_HASH        the consumer never marks a hashed cell consumed, so one lap
 *                          later the cell still looks available and its old bytes are hashed again
 *   BUG_LOST_WAKEUP        (MULTI) the producer re-checks before announcing that it sleeps
 *   BUG_AHEAD_UNREAD       (MULTI) the side-by-side pass reads a cell ahead whose read is still
 *                          in flight (any cell not consumed, instead of an available one)
 *   BUG_AHEAD_MISCOUNT     (MULTI) the side-by-side pass does not count the head's own cell, so
 *                          the last cell it hashed is hashed again
 *   BUG_RECLAIM_UNHASHED   the producer takes back the buffer of a cell that is available, not
 *                          yet hashed, and reads the next block into it
 *   BUG_WINDOW_LATE        (MULTI) the consumer looks for a sleeping producer before it moves the
 *                          window on, so a producer held by the window can sleep through it
 *   BUG_DEEPEN_OVER        (DEEPENS) deepened, the producer counts one cell more than the ring has
 *
 * Atomicity: each atomic block below touches at most one location another process can
 * race on in a way that matters (the reasons are given at each one), so grouping them
 * only removes interleavings that cannot change the outcome and keeps the state space small.
 */

#define SINGLE		1
#define MULTI		2
#define MULTI_BLOCKING	3

#ifndef DESIGN
#define DESIGN MULTI
#endif
#ifndef QUEUE_DEPTH
#define QUEUE_DEPTH 2
#endif
#ifndef BUFFERS
#define BUFFERS 2
#endif
#ifndef BLOCKS
#define BLOCKS 5
#endif
#ifndef RETRIES
#define RETRIES 1
#endif
#ifndef PROCESS_IN_INNER_LOOP
#define PROCESS_IN_INNER_LOOP 0
#endif
#ifndef WINDOW
#define WINDOW BUFFERS
#endif
#ifndef FIRST_CELLS
#define FIRST_CELLS BUFFERS
#endif
#ifndef DEEP_DEPTH
#define DEEP_DEPTH QUEUE_DEPTH
#endif
#ifdef BUG_DEEPEN_OVER
#define DEEP_CELLS (BUFFERS + 1)
#else
#define DEEP_CELLS BUFFERS
#endif
#if DESIGN != SINGLE && DESIGN != MULTI && DESIGN != MULTI_BLOCKING
#error "DESIGN must be SINGLE, MULTI or MULTI_BLOCKING"
#endif
#if BUFFERS < 1 || BUFFERS > 8 || QUEUE_DEPTH < 1 || BLOCKS < 1 || BLOCKS > 254
#error "need 1 <= BUFFERS <= 8, QUEUE_DEPTH >= 1, 1 <= BLOCKS <= 254"
#endif
#if WINDOW < 1 || WINDOW > BUFFERS
#error "need 1 <= WINDOW <= BUFFERS"
#endif
#if FIRST_CELLS < 1 || FIRST_CELLS > BUFFERS || DEEP_DEPTH < QUEUE_DEPTH
#error "need 1 <= FIRST_CELLS <= BUFFERS, DEEP_DEPTH >= QUEUE_DEPTH"
#endif
#if defined(DEEPENS) && DESIGN != MULTI
#error "DEEPENS is uring_b3sum's, a MULTI design"
#endif

#define NO_DATA 255

/* enum cell_state: consumed -> requested -> available -> consumed */
mtype = { CONSUMED, REQUESTED, AVAILABLE };
/* Where a REQUESTED cell's read is: not a request (NO_SQE), an SQE queued but not yet
 * submitted (QUEUED), owned by the kernel (SUBMITTED), or its CQE is in the CQ (DONE). */
mtype = { NO_SQE, QUEUED, SUBMITTED, DONE };

mtype state[BUFFERS];		/* cell->state */
mtype sqe[BUFFERS];
byte holds[BUFFERS];		/* cell->offset / block_size: the block the cell was requested for */
byte buf[BUFFERS];		/* cell->buf_index: the buffer the producer gave the cell's request */
byte data[BUFFERS];		/* ghost, per buffer: whose bytes it holds (only a whole read writes it) */
bool lent[BUFFERS];		/* ghost, per buffer: given to a request, not yet taken back */
byte free_buffers[BUFFERS];	/* the producer's stack */
byte nr_free;
byte reclaim_head;		/* blocks whose buffers the producer took back */
byte request_limit = WINDOW;	/* the consumer's: consumer_head + the window (every block full) */
byte window = WINDOW;
byte cells_limit = FIRST_CELLS;	/* ring->cells_limit: the buffers in use (ring_depth.c grows it) */
byte depth_limit = QUEUE_DEPTH;	/* ring->depth_limit: reads in flight at most */
byte producer_head;		/* next block to request */
byte consumer_head;		/* next block to hash */
byte in_flight;			/* requests queued or submitted, not yet reaped */
byte hashed_up_to;		/* ghost: blocks fed to the hasher so far, as seen by the hasher */
byte retries_left = RETRIES;	/* bound on transient failures, keeps the state space finite */
chan cq = [DEEP_DEPTH] of { byte, bool };	/* the completion queue: cell, whole read? */

#if DESIGN != SINGLE
bool producer_sleeping;		/* ring->producer_sleeping */
bool eventfd_signalled;		/* ring->eventfd: a counter that read() returns and zeroes */
bool consumer_sleeping;		/* ring->consumer_sleeping */
bool consumer_woken;		/* ring->consumer_wakeups changed since the consumer sampled it */
#endif

#ifdef BUG_REUSE_UNCONSUMED
#define CELL_FREE(c)	(state[c] != REQUESTED)
#else
#define CELL_FREE(c)	(state[c] == CONSUMED)
#endif

/* ring_can_request(): the cell's last block's buffer taken back, and within the window */
#ifdef BUG_REUSE_UNCONSUMED
#define CAN_REQUEST	(producer_head < BLOCKS && in_flight < depth_limit && \
			 CELL_FREE(producer_head % BUFFERS) && producer_head < request_limit)
#else
#define CAN_REQUEST	(producer_head < BLOCKS && in_flight < depth_limit && \
			 producer_head - reclaim_head < cells_limit && producer_head < request_limit)
#endif
#ifdef BUG_RECLAIM_UNHASHED
#define RECLAIMABLE(c)	(state[c] != REQUESTED)
#else
#define RECLAIMABLE(c)	(state[c] == CONSUMED)
#endif
#define CELL_READY	(consumer_head < BLOCKS && state[consumer_head % BUFFERS] == AVAILABLE)
#define PRODUCER_DONE	(producer_head == BLOCKS && in_flight == 0)
#define ALL_HASHED	(consumer_head == BLOCKS)

/* ring_request(): fill every free cell the queue depth allows. Each request is atomic: the
 * only shared location it reads is the cell's state, which nobody else changes while it is
 * CONSUMED (the consumer only turns AVAILABLE into CONSUMED). */
inline reclaim_buffers()
{
	do
	:: atomic {
		reclaim_head < producer_head && RECLAIMABLE(reclaim_head % BUFFERS) ->
		cell = reclaim_head % BUFFERS;
		assert(lent[buf[cell]]);
		lent[buf[cell]] = false;
		free_buffers[nr_free] = buf[cell];
		nr_free++;
		/* what a taken-back buffer or a released cell held matters no more: fewer states */
		data[buf[cell]] = NO_DATA;
		buf[cell] = 0;
		reclaim_head++;
		cell = 0
	   }
	:: else -> break
	od
}

inline ring_request()
{
	do
	:: true ->
	   reclaim_buffers();
	   if
	   :: atomic {
		CAN_REQUEST ->
		cell = producer_head % BUFFERS;
#ifdef BUG_REUSE_UNCONSUMED
		if	/* none free: the cell keeps the buffer it had, as when buffers were the cells' */
		:: nr_free > 0 -> nr_free--; buf[cell] = free_buffers[nr_free]
		:: else -> skip
		fi;
#else
		nr_free--;
		buf[cell] = free_buffers[nr_free];
		free_buffers[nr_free] = 0;	/* (a slot above the top holds nothing: fewer states) */
#endif
		assert(!lent[buf[cell]]);
		lent[buf[cell]] = true;
		printf("producer: request block %d into cell %d, buffer %d\n", producer_head, cell, buf[cell]);
		state[cell] = REQUESTED;
		holds[cell] = producer_head;
		sqe[cell] = QUEUED;
		in_flight++;
		producer_head++;
		progress = true;
		cell = 0
	      }
	   :: else -> break
	   fi
	od
}

/* ring_submit(): hand every queued SQE to the kernel (io_uring_submit). */
inline ring_submit()
{
	d_step {
		cell = 0;
		do
		:: cell < BUFFERS ->
			if
			:: sqe[cell] == QUEUED -> sqe[cell] = SUBMITTED
			:: else -> skip
			fi;
			cell++
		:: else -> break
		od;
		cell = 0
	}
}

/* The consumer thread's futex: wake it if it announced that it sleeps. */
inline wake_consumer()
{
#if DESIGN != SINGLE
	if
	:: consumer_sleeping -> consumer_woken = true
	:: else -> skip
	fi
#else
	skip
#endif
}

/* ring_reap_one(): take one CQE. Atomic: the CQ is only read here, and the kernel can
 * always post (in_flight <= depth_limit <= DEEP_DEPTH = the CQ's size), so nobody observes the steps
 * in between. A transient failure (EAGAIN, a short read, ECANCELED of a linked read) is
 * queued again for the same cell, which stays REQUESTED. */
inline reap_one()
{
	atomic {
		cq?cell,whole;
		in_flight--;
		if
		:: whole ->
			printf("producer: reap block %d, cell %d available\n", holds[cell], cell);
			sqe[cell] = NO_SQE;
			state[cell] = AVAILABLE
		:: else ->
			printf("producer: reap block %d, transient failure: queue it again\n", holds[cell]);
			sqe[cell] = QUEUED;
			in_flight++;
#ifdef BUG_RETRY_AVAILABLE
			state[cell] = AVAILABLE;
#endif
			skip
		fi;
		progress = true;
		cell = 0;
		whole = false
	};
	wake_consumer()		/* after the release store, as the seq_cst flag protocol needs */
}

/* ring_deepen(): once, about to sleep, the producer may take every cell and DEEP_DEPTH reads (the
 * C code does when every read is out, O_DIRECT and unfinished; here at any such point, which
 * covers that). Its own limits, stored before its next request: it then loops, not sleeps. */
inline ring_deepen()
{
	if
	:: cells_limit < DEEP_CELLS || depth_limit < DEEP_DEPTH ->
		atomic {
			printf("producer: deepen to %d cells, %d reads\n", DEEP_CELLS, DEEP_DEPTH);
			cells_limit = DEEP_CELLS;
			depth_limit = DEEP_DEPTH;
			progress = true
		}
	:: true -> skip
	fi
}

/* window_release(): the consumer moves the window on past the cells it released (a store of
 * its own, after theirs); it may widen it once (ring_consume.c grows it to every buffer). */
inline move_window()
{
	atomic {
		if
#ifdef GROWS
		:: window < cells_limit -> window = cells_limit	/* every buffer in use */
#endif
		:: true -> skip
		fi;
		request_limit = consumer_head + window
	}
}

/* Hash one block. Two steps, so that a producer or kernel writing into the buffer while
 * it is hashed is seen by the second assertion. */
inline hash_block()
{
	atomic {
		c = consumer_head % BUFFERS;
		assert(state[c] == AVAILABLE && data[buf[c]] == consumer_head && data[buf[c]] == hashed_up_to);
		printf("consumer: hash block %d from cell %d\n", consumer_head, c)
	};
	atomic {
		assert(state[c] == AVAILABLE && data[buf[c]] == consumer_head);
		hashed_up_to++;
#ifndef BUG_DOUBLE_HASH
		state[c] = CONSUMED;
#endif
		consumer_head++;
		c = 0
	}
}

/* ring_consume.c's side-by-side pass: the run of available cells from the head on is hashed
 * at once (whole small files, each its own hasher: the C code hashes them side by side, the
 * model one after another), and ring_consume() then walks the head over them without hashing
 * them again (r->hashed_ahead, here ahead_left). Each cell is read in two steps, as in
 * hash_block(): it must hold the block its place says, and nothing may write it meanwhile. */
inline hash_ahead()
{
	ahead = 0;
	do
	:: ahead < BUFFERS && consumer_head + ahead < BLOCKS &&
#ifdef BUG_AHEAD_UNREAD
	   state[(consumer_head + ahead) % BUFFERS] != CONSUMED ->
#else
	   state[(consumer_head + ahead) % BUFFERS] == AVAILABLE ->
#endif
		atomic {
			c = (consumer_head + ahead) % BUFFERS;
			assert(data[buf[c]] == consumer_head + ahead && data[buf[c]] == hashed_up_to)
		};
		atomic {
			assert(state[c] == AVAILABLE && data[buf[c]] == consumer_head + ahead);
			hashed_up_to++;
			ahead++;
			c = 0
		}
	:: else -> break
	od;
#ifdef BUG_AHEAD_MISCOUNT
	ahead_left = ahead - 1;	/* the head's own cell not counted: it is hashed again later */
#else
	ahead_left = ahead;
#endif
	ahead = 0
}

/* A cell hashed ahead: released without hashing it again. */
inline walk_over()
{
	atomic {
		c = consumer_head % BUFFERS;
		assert(state[c] == AVAILABLE && data[buf[c]] == consumer_head && consumer_head < hashed_up_to);
		state[c] = CONSUMED;
		consumer_head++;
		ahead_left--;
		c = 0
	}
}

#if DESIGN == SINGLE

/* ring_consume(): hash available cells in file order. */
inline ring_consume()
{
	do
	:: CELL_READY -> hash_block(); move_window()
	:: else -> break
	od
}

/* One thread: request, submit, wait for one completion, reap what is ready, consume. */
proctype single()
{
	byte cell, c;		/* scratch: reset to 0 after use, so they add no states */
	bool whole, progress;

	do
	:: ALL_HASHED -> break
	:: else ->
		ring_request();
		ring_submit();
		/* The article: when nothing is in flight every cell is consumed, so the request
		 * step above had something to do. ring.c returns ERR_STALLED if this fails. */
		assert(in_flight > 0);
		reap_one();	/* blocks until a completion is ready */
#if PROCESS_IN_INNER_LOOP
		ring_consume();
#endif
		do
		:: len(cq) > 0 ->
			reap_one();
#if PROCESS_IN_INNER_LOOP
			ring_consume();
#endif
			skip
		:: else -> break
		od;
		ring_consume()
	od;
	assert(in_flight == 0 && producer_head == BLOCKS && hashed_up_to == BLOCKS)
}

#else

/* The producer thread: request, submit, reap what is ready; never hash. */
proctype producer()
{
	byte cell;		/* scratch: reset to 0 after use, so it adds no states */
	bool whole, progress;

	do
	:: PRODUCER_DONE -> break
	:: else ->
		progress = false;
		ring_request();
		ring_submit();
#if DESIGN == MULTI_BLOCKING
		/* The article's broken producer: it cannot request, so it waits for a completion,
		 * even when nothing is in flight and only the consumer could unblock it. */
		reclaim_buffers();
		atomic {	/* (atomic only so that the message shows the state it decided on) */
			if
			:: CAN_REQUEST || PRODUCER_DONE -> skip
			:: else ->
				printf("producer: cannot request block %d (cell %d is %e), in_flight=%d: wait for a completion\n",
					producer_head, producer_head % BUFFERS, state[producer_head % BUFFERS], in_flight);
producer_waits_for_completion:
				len(cq) > 0;	/* io_uring_wait_cqe(): blocks until a completion is ready */
				reap_one()
			fi
		};
#endif
		do
		:: len(cq) > 0 -> reap_one()
		:: else -> break
		od;
#if DESIGN == MULTI
		/* Nothing to do: sleep on the eventfd, which every CQE and a consumer that frees
		 * a cell while we sleep both signal. Announce the sleep, then re-check (the
		 * seq_cst flag protocol), else a cell freed in between would be a lost wake-up. */
#ifdef DEEPENS
		ring_deepen();
#endif
		if
		:: progress -> skip
		:: else ->
#ifndef BUG_LOST_WAKEUP
			producer_sleeping = true;
#endif
			reclaim_buffers();	/* ring_can_request() takes back what was released since */
			if
			:: len(cq) > 0 || CAN_REQUEST -> skip
			:: else ->
#ifdef BUG_LOST_WAKEUP
				producer_sleeping = true;	/* too late: a cell freed since the check is lost */
#endif
				printf("producer: sleep on the eventfd, in_flight=%d\n", in_flight);
				atomic { eventfd_signalled -> eventfd_signalled = false }
			fi;
			producer_sleeping = false
		fi
#endif
	od;
	assert(producer_head == BLOCKS && in_flight == 0)
}

/* The consumer thread: hash the cell under consumer_head when it is available, else sleep
 * on the futex. The futex word's "changed since sampled" is the consumer_woken flag: the
 * consumer clears it where ring.c samples consumer_wakeups, the producer sets it.
 * uring_b3sum's spin before it (ring_wake.c) writes nothing the producer reads (the
 * consumer is not yet "sleeping"): a spin that finds the cell ready is this loop's next
 * turn, one that does not goes on to this sleep. */
proctype consumer()
{
	byte c, ahead, ahead_left;

	do
	:: ALL_HASHED -> break
	:: else ->
		if
		:: CELL_READY ->
			if
			:: ahead_left > 0 -> walk_over()
			:: ahead_left == 0 -> hash_ahead(); walk_over()
			:: ahead_left == 0 -> hash_block()
			fi;
#ifndef BUG_WINDOW_LATE
			move_window();
#endif
			if		/* a freed cell may be what a sleeping producer waits for */
			:: producer_sleeping -> eventfd_signalled = true
			:: else -> skip
			fi
#ifdef BUG_WINDOW_LATE
			;
			move_window()
#endif
		:: else ->
			consumer_woken = false;
			consumer_sleeping = true;
			if
			:: CELL_READY -> skip
			:: else ->
				consumer_woken	/* futex_wait(&consumer_wakeups, sampled) */
			fi;
			consumer_sleeping = false
		fi
	od;
	assert(hashed_up_to == BLOCKS)
}

#endif

/* The kernel: completes any submitted read, in any order, and may fail it transiently
 * RETRIES times in all. A whole read writes the buffer, which must still be REQUESTED. */
active proctype kernel()
{
	byte cell;
end_idle:
	do
	:: atomic {
		if
		:: (0 < BUFFERS && sqe[0] == SUBMITTED) -> cell = 0
		:: (1 < BUFFERS && sqe[1] == SUBMITTED) -> cell = 1
		:: (2 < BUFFERS && sqe[2] == SUBMITTED) -> cell = 2
		:: (3 < BUFFERS && sqe[3] == SUBMITTED) -> cell = 3
		:: (4 < BUFFERS && sqe[4] == SUBMITTED) -> cell = 4
		:: (5 < BUFFERS && sqe[5] == SUBMITTED) -> cell = 5
		:: (6 < BUFFERS && sqe[6] == SUBMITTED) -> cell = 6
		:: (7 < BUFFERS && sqe[7] == SUBMITTED) -> cell = 7
		fi;
		sqe[cell] = DONE;
		if
		:: true ->
			assert(state[cell] == REQUESTED && lent[buf[cell]]);
			data[buf[cell]] = holds[cell];
			printf("kernel: complete block %d in cell %d\n", holds[cell], cell);
			cq!cell,true
		:: retries_left > 0 ->
			retries_left--;
			printf("kernel: block %d in cell %d fails transiently\n", holds[cell], cell);
			cq!cell,false
		fi;
#if DESIGN != SINGLE
		eventfd_signalled = true;	/* io_uring_register_eventfd */
#endif
		cell = 0
	   }
	od
}

init
{
	atomic {
		byte i;
		nr_free = BUFFERS;
		do
		:: i < BUFFERS -> state[i] = CONSUMED; sqe[i] = NO_SQE; data[i] = NO_DATA;
			free_buffers[i] = BUFFERS - 1 - i; i++
		:: else -> break
		od;
#if DESIGN == SINGLE
		run single()
#else
		run producer();
		run consumer()
#endif
	}
}

/* Progress: every block is eventually hashed (check with pan -a -f: weak fairness). */
ltl all_hashed { <> (consumer_head == BLOCKS) }
