/* SPDX-License-Identifier: MIT */
/* A file's way through the ring: opened by the producer, finished by the consumer, in order. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ringsum.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cachestat_range { uint64_t off, len; };
struct cachestat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };

/*
 * A mapped file that is truncated while it is hashed faults with SIGBUS. The
 * handler maps a zero page over the hole so that hashing can run on, and the
 * file is then reported as changed. A signal handler has no context but
 * globals, hence this one.
 */
static volatile sig_atomic_t mapped_file_lost_pages;

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
	long page = sysconf(_SC_PAGESIZE);
	void *hole = (void *)((uintptr_t)info->si_addr & ~(uintptr_t)(page - 1));

	(void)sig;
	(void)context;
	mapped_file_lost_pages = 1;
	if (mmap(hole, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		_exit(128 + SIGBUS);
}

/* All of the file in the page cache? Anything less is read through the ring. */
static bool fully_cached(int fd, uint64_t size)
{
	struct cachestat_range range = { 0, size };
	struct cachestat cs;
	long page = sysconf(_SC_PAGESIZE);

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return false;
	return cs.nr_cache >= (size + page - 1) / page;
}

static int hash_from_memory(struct input *in)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO }, old;
	uint64_t size = in->st.st_size;
	void *map;

	if (!size)
		return 0;
	/* No MAP_POPULATE: the hashing threads fault the pages in, in parallel, instead of one serial pass. */
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, in->fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	mapped_file_lost_pages = 0;
	sigaction(SIGBUS, &sa, &old);
	hash_mapped(&in->hasher, map, size);	/* the whole file at once: every core */
	sigaction(SIGBUS, &old, NULL);
	munmap(map, size);
	return mapped_file_lost_pages ? -ERR_FILE_CHANGED : 0;
}

/* IOPOLL spins on the device's poll queues; on a device without them it would never complete. */
static int check_pollable(const struct stat *st)
{
	char path[80], value = '0';
	int sysfs;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/io_poll", major(st->st_dev), minor(st->st_dev));
	sysfs = open(path, O_RDONLY | O_CLOEXEC);
	if (sysfs < 0) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/io_poll", major(st->st_dev), minor(st->st_dev));
		sysfs = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (sysfs >= 0) {
		if (read(sysfs, &value, 1) != 1)
			value = '0';
		close(sysfs);
	}
	return value == '1' ? 0 : -ERR_NOT_POLLABLE;
}

static int open_regular(struct ring *r, struct input *in, unsigned index)
{
	int flags;

	/* O_NONBLOCK so that a FIFO cannot block the open; it is cleared before any read. */
	in->fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in->fd < 0)
		return -errno;
	if (fstat(in->fd, &in->st))
		return -errno;
	if (S_ISDIR(in->st.st_mode))
		return -EISDIR;
	if (!S_ISREG(in->st.st_mode))
		return -ERR_NOT_REGULAR;
	/* Asking for O_DIRECT is asking for the ring: auto only takes the page cache without it. */
	in->from_memory = r->path_choice == PATH_MEMORY ||
			  (r->path_choice == PATH_AUTO && !r->direct && fully_cached(in->fd, in->st.st_size));
	if (r->verbose && in->from_memory)
		fprintf(stderr, "%s: %s: hashing from the page cache (mmap, every core)\n", r->prog, in->path);
	else if (r->verbose)
		fprintf(stderr, "%s: %s: reading through the io_uring ring (%zu%s blocks, %u deep, %u buffers)\n",
			r->prog, in->path, r->block_size % 1024 ? r->block_size : r->block_size >> 10,
			r->block_size % 1024 ? "-byte" : "K", r->queue_depth, r->nr_cells);
	flags = fcntl(in->fd, F_GETFL);
	flags = (flags & ~O_NONBLOCK) | (r->direct && !in->from_memory ? O_DIRECT : 0);
	if (fcntl(in->fd, F_SETFL, flags))
		return errno == EINVAL && r->direct ? -ERR_DIRECT_UNSUPPORTED : -errno;
	if (in->from_memory)
		return 0;
	/* Buffered reads live on readahead: saying the file is read in order doubles its window. */
	if (r->fadvise_sequential && !r->direct)
		posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (r->iopoll)
		return check_pollable(&in->st);
	if (r->fixed_file) {
		/* Fewer files than cells + 1 can be between the heads, so their slots never collide. */
		in->fixed_slot = index % (r->nr_cells + 1);
		return io_uring_register_files_update(&r->uring, in->fixed_slot, &in->fd, 1) < 0 ? -EBADF : 0;
	}
	return 0;
}

void input_open(struct ring *r, struct input *in, unsigned index)
{
	in->nr_blocks = 1;
	in->completions = 0;
	in->from_memory = false;
	blake3_hasher_init(&in->hasher);
	in->error = open_regular(r, in, index);
	if (!in->error && !in->from_memory && in->st.st_size > 0)
		in->nr_blocks = (in->st.st_size + r->block_size - 1) / r->block_size;
}

size_t block_length(const struct ring *r, const struct input *in, uint64_t block)
{
	uint64_t offset = block * r->block_size;

	if (in->error || in->from_memory || offset >= (uint64_t)in->st.st_size)
		return 0;
	return in->st.st_size - offset < r->block_size ? in->st.st_size - offset : r->block_size;
}

/* b3sum reads to end of file: a file whose size undercounts its data must not get a hash. */
static int check_end_of_file(int fd, uint64_t size)
{
	char probe;
	ssize_t n;
	int flags = fcntl(fd, F_GETFL);

	if (flags & O_DIRECT && fcntl(fd, F_SETFL, flags & ~O_DIRECT))
		return -errno;
	do
		n = pread(fd, &probe, 1, size);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? -ERR_FILE_LONGER : 0;
}

static int check_unchanged(const struct input *in)
{
	struct stat now;
	int ret = check_end_of_file(in->fd, in->st.st_size);

	if (ret)
		return ret;
	if (fstat(in->fd, &now))
		return -errno;
	if (now.st_size != in->st.st_size || now.st_mtim.tv_sec != in->st.st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != in->st.st_mtim.tv_nsec)
		return -ERR_FILE_CHANGED;
	return 0;
}

void input_finish(struct ring *r, struct input *in)
{
	uint8_t hash[BLAKE3_OUT_LEN];
	bool match;

	if (!in->error && in->from_memory)
		in->error = hash_from_memory(in);
	if (!in->error)
		in->error = check_unchanged(in);
	if (in->fd >= 0)
		close(in->fd);
	in->fd = -1;
	r->consumer_input++;
	if (in->error) {
		r->failed_inputs++;
		if (in->checking)
			print_check_failure(in->path, in->error);
		else
			print_error(r->prog, in->path, in->error);
		return;
	}
	blake3_hasher_finalize(&in->hasher, hash, BLAKE3_OUT_LEN);
	if (!in->checking) {
		print_hash(in->path, hash);
		return;
	}
	match = !memcmp(hash, in->expected, BLAKE3_OUT_LEN);
	if (!match) {
		r->failed_inputs++;
		r->mismatches++;
	}
	if (!match || !r->quiet)
		print_check(in->path, match ? "OK" : "FAILED");
}
