/* SPDX-License-Identifier: MIT */
/* Is a file in the page cache? Asked once per file as it is opened (input.c), for any reader. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "input.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cachestat_range { uint64_t off, len; };
struct cachestat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };

/*
 * Three quarters of the file or more in the page cache? Then it is hashed from
 * memory, the missing pages faulted in. Some of it, but less? Then the ring
 * reads each block from the cache if all of it is there, else from the device
 * (input.c, open_mixed). On the Zen 5, with 3-10% of a file read back by dd
 * evicted in 2 MiB pieces, memory took 0.75-0.83 of the time of the ring
 * block by block; with 20% evicted the ring took 0.89 [0.75, 1.19] of
 * memory's (docs/cold-path/partial-cache-zen5). This page cache loses pages
 * by the minute, so "all of it" is rarely true.
 *
 * cachestat() visits every folio in its range: on a cached file held in 4 KiB
 * folios that costs a noticeable share of the time hashing it takes, and the
 * consumer waits for it. So a file of more than RESIDENCY_WHOLE bytes is
 * sampled: one window in each 64th of it, at a scattered place in that 64th
 * so that a regular pattern of evicted pieces cannot line up with the windows.
 */
#define RESIDENCY_SAMPLES 64
#define RESIDENCY_WINDOW (64u << 10)
#define RESIDENCY_WHOLE (4 * RESIDENCY_SAMPLES * RESIDENCY_WINDOW)

/* Where the i-th of n samples of a file of size bytes starts: somewhere in its n-th, page aligned. */
static uint64_t sample_offset(unsigned i, unsigned n, uint64_t size, uint64_t window, uint64_t page)
{
	uint64_t stride = size / n, scatter = stride > window ? (i * 0x9e3779b97f4a7c15ull >> 32) % (stride - window) : 0;

	return (i * stride + scatter) & ~(page - 1);
}

/* Pages of [offset, offset + length) in the page cache, or -errno where the kernel will not say
 * (an old kernel, or a reader it refuses). */
static int64_t cachestat_pages(int fd, uint64_t offset, uint64_t length)
{
	struct cachestat_range range = { offset, length };
	struct cachestat cs;

	return syscall(__NR_cachestat, fd, &range, &cs, 0) ? -errno : (int64_t)cs.nr_cache;
}

/* By cachestat(): -errno where the kernel will not say. */
static int cached_by_cachestat(int fd, uint64_t size, uint64_t page)
{
	unsigned samples = size > RESIDENCY_WHOLE ? RESIDENCY_SAMPLES : 1;
	uint64_t pages = 0, cached = 0, offset = 0, length = size;
	int64_t found;

	for (unsigned i = 0; i < samples; i++) {
		if (samples > 1) {
			offset = sample_offset(i, samples, size, RESIDENCY_WINDOW, page);
			length = RESIDENCY_WINDOW;
		}
		if ((found = cachestat_pages(fd, offset, length)) < 0)
			return (int)found;
		cached += found;
		pages += (length + page - 1) / page;
	}
	return cached * 4 >= pages * 3 ? CACHED_MOSTLY : cached ? CACHED_PART : CACHED_NONE;
}

/*
 * Blocks this thread has had read from a device (ru_inblock, counted as a read
 * is submitted; 0 throughout where the kernel keeps no I/O accounting).
 * RWF_NOWAIT is no question about the cache: on a miss the kernel starts
 * reading the page before it answers EAGAIN, and a read done in between is
 * copied out as if it had been there (filemap_get_pages). Probing a file just
 * evicted on the Zen 3 (add026ac3c38), by hand, 4 of 3200 pages answered so,
 * and the probe's own read told all 3200; tests/test_residency_any_reader.py
 * holds that it does.
 */
static long thread_reads(void)
{
	struct rusage usage;

	return getrusage(RUSAGE_THREAD, &usage) ? 0 : usage.ru_inblock;
}

/*
 * cachestat() answers only a caller that owns the file or may write to it, as
 * mincore() on its mapping does: a reader of shared data was told "cold" and
 * read a cached file from the disk. A non-blocking read, preadv2(RWF_NOWAIT),
 * is refused to no reader: a page in the cache is copied, a missing one is
 * EAGAIN, or read by the probe itself (thread_reads). One page a sample;
 * POSIX_FADV_RANDOM meanwhile, so that a miss reads ahead no more than the
 * page it asked for, and sampling stops once a quarter has missed.
 */
static bool page_cached(int fd, uint64_t offset, uint64_t page)
{
	char probe[4096];
	struct iovec iov = { probe, sizeof(probe) < page ? sizeof(probe) : page };
	long reads = thread_reads();

	return preadv2(fd, &iov, 1, offset, RWF_NOWAIT) > 0 && thread_reads() == reads;
}

static enum cached cached_by_reading(int fd, uint64_t size, uint64_t page)
{
	uint64_t pages = (size + page - 1) / page;
	unsigned samples = pages < RESIDENCY_SAMPLES ? pages : RESIDENCY_SAMPLES, missed = 0, tried = 0;

	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	for (; tried < samples && missed * 4 <= samples; tried++)
		missed += !page_cached(fd, sample_offset(tried, samples, size, page, page), page);
	posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL);
	return missed * 4 <= samples ? CACHED_MOSTLY : missed < tried ? CACHED_PART : CACHED_NONE;
}

enum cached cache_state(int fd, uint64_t size)
{
	uint64_t page = sysconf(_SC_PAGESIZE);
	int by_cachestat = cached_by_cachestat(fd, size, page);

	return by_cachestat >= 0 ? (enum cached)by_cachestat : cached_by_reading(fd, size, page);
}

bool mostly_cached(int fd, uint64_t size)
{
	return cache_state(fd, size) == CACHED_MOSTLY;
}

bool cachestat_answers(int fd)
{
	return cachestat_pages(fd, 0, 1) >= 0;
}

/*
 * Every page of [offset, offset + length) in the page cache? The ring's choice
 * for one block of a file partly cached. By cachestat(), or, where it refused
 * this reader (by_reading: the caller asked once, input.c), by non-blocking
 * reads of BLOCK_PROBES pages across it, the first miss enough: a
 * file leaves the cache in folios and pieces, not page by page, and a hole
 * between the probes is read through the cache, as is right, only slower.
 * The caller keeps POSIX_FADV_RANDOM on fd (input.c): a miss reads its page.
 */
#define BLOCK_PROBES 8

bool range_cached(int fd, uint64_t offset, uint64_t length, bool by_reading)
{
	uint64_t page = sysconf(_SC_PAGESIZE);
	int64_t found = by_reading ? -EPERM : cachestat_pages(fd, offset, length);

	if (found >= 0)
		return (uint64_t)found * page >= length;
	for (unsigned i = 0; i < BLOCK_PROBES; i++)
		if (!page_cached(fd, (offset + length / BLOCK_PROBES * i) & ~(page - 1), page))
			return false;
	return true;
}
