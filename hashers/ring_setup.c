/* SPDX-License-Identifier: MIT */
/* Setting the ring up: its configuration from the options, its buffers, and io_uring with the best flags it takes. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "faults.h"

static const unsigned droppable_setup_flags[] = {
	IORING_SETUP_DEFER_TASKRUN,
	IORING_SETUP_SINGLE_ISSUER,
	IORING_SETUP_TASKRUN_FLAG,
	IORING_SETUP_COOP_TASKRUN,
};

static int setup_uring(struct ring *r, unsigned flags)
{
	struct io_uring_params p;
	unsigned i = 0;
	int ret;

	for (;;) {
		memset(&p, 0, sizeof(p));
		p.flags = flags;
		p.sq_thread_idle = 100;	/* ms before the SQPOLL thread sleeps */
		ret = io_uring_queue_init_params(r->cfg->depth_grows ? r->cfg->nr_cells : r->cfg->knobs.queue_depth,
						 &r->uring, &p);
		if (ret != -EINVAL || i == sizeof(droppable_setup_flags) / sizeof(droppable_setup_flags[0]))
			return ret;
		flags &= ~droppable_setup_flags[i++];
	}
}

static int register_buffers(struct ring *r)
{
	struct iovec *iov = calloc(r->cfg->nr_cells, sizeof(*iov));
	int ret;

	if (!iov)
		return -ENOMEM;
	for (unsigned i = 0; i < r->cfg->nr_cells; i++)
		iov[i] = (struct iovec){ .iov_base = r->memory + (size_t)i * r->cfg->knobs.block_size,
					 .iov_len = r->cfg->knobs.block_size };
	ret = io_uring_register_buffers(&r->uring, iov, r->cfg->nr_cells);
	free(iov);
	return ret;
}

/*
 * A cached file's staging: forced by its knob, else in place and prefetched
 * measured on the first tasks hashed (parallel_hash.cpp, which says what
 * rests on what): whether prefetching pays is the CPU's, so the CPU is asked.
 * The ring's blocks have a trial of their own (their data is not the page
 * cache's), and only uring_b3sum's: the article's variants hash in place.
 */
static enum staging staging_of(const struct knobs *k)
{
	if (k->stage_copy)
		return STAGE_COPY;
	if (k->read_once)
		return STAGE_READ_ONCE;
	if (k->in_place)
		return STAGE_IN_PLACE;
	if (k->prefetch)
		return STAGE_PREFETCH;
	return STAGE_MEASURED;
}

/* What the options and the variant make of the ring; faults.c may narrow it in the test builds. */
static void configure(struct ring_config *cfg, const struct options *opts, const struct variant *v)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->prog = opts->prog;
	cfg->knobs = opts->knobs;
	knobs_for_variant(&cfg->knobs, v);
	cfg->direct_when_cold = v->direct_when_cold && !cfg->knobs.direct && !cfg->knobs.buffered &&
				cfg->knobs.block_size % DIRECT_ALIGN == 0;
	cfg->nr_cells = v->uses_uring ? opts->knobs.buffers : 1;
	cfg->hash_threads = hash_max_threads();
	cfg->hashing = cfg->knobs.parallel_hash ? HASH_PARALLEL :
		       v->hashes_when_behind && !cfg->knobs.serial_hash && cfg->hash_threads > 1 && cfg->nr_cells > 1 ?
		       HASH_WHEN_BEHIND : HASH_SERIAL;
	cfg->adapts_window = v->adapts_window && v->uses_uring;
	cfg->consumer_spins = v->consumer_spins && v->uses_eventfd;
	cfg->side_trial_after = SIDE_TRIAL_AFTER;
	cfg->depth_grows = opts->depth_grows && cfg->adapts_window && cfg->nr_cells >= 2 * cfg->knobs.queue_depth;
	cfg->first_cells = cfg->depth_grows ? cfg->nr_cells / 2 : cfg->nr_cells;
	cfg->staging = staging_of(&cfg->knobs);
	cfg->ring_staging = !v->chooses_path ? STAGE_IN_PLACE :
			    cfg->staging == STAGE_PREFETCH || cfg->staging == STAGE_MEASURED ? cfg->staging : STAGE_IN_PLACE;
	cfg->path_choice = v->chooses_path && !opts->no_mmap ? opts->path_choice : PATH_RING;
	cfg->verbose = opts->verbose;
	cfg->quiet = opts->quiet;
	cfg->keyed = opts->keyed;
	cfg->format = opts->format;
	cfg->sqe_flags = (cfg->knobs.drain ? IOSQE_IO_DRAIN : 0) | (cfg->knobs.link ? IOSQE_IO_LINK : 0);
}

/* cfg is built here, and read-only once this returns: r keeps a const pointer to it. */
int ring_setup(struct ring *r, struct ring_config *cfg, const struct options *opts, const struct variant *v)
{
	size_t bytes;
	int ret;

	memset(r, 0, sizeof(*r));
	r->eventfd = -1;
	r->cfg = cfg;
	configure(cfg, opts, v);
	progress_init(&r->progress, opts);
	faults_setup(cfg, &r->progress);

	if (__builtin_mul_overflow(cfg->knobs.block_size, (size_t)cfg->nr_cells, &bytes))
		return -ENOMEM;
	ret = posix_memalign((void **)&r->memory, cfg->knobs.huge_pages ? HUGE_PAGE_SIZE : DIRECT_ALIGN, bytes);
	if (ret)
		return -ret;
	r->cells = calloc(cfg->nr_cells, sizeof(*r->cells));
	r->nr_slots = cfg->nr_cells + 1;
	r->inputs = calloc(r->nr_slots, sizeof(*r->inputs));
	r->hash_jobs = calloc(cfg->nr_cells, sizeof(*r->hash_jobs));
	r->free_buffers = calloc(cfg->nr_cells, sizeof(*r->free_buffers));
	if (!r->cells || !r->inputs || !r->hash_jobs || !r->free_buffers)
		return -ENOMEM;
	for (unsigned i = 0; i < r->nr_slots; i++)	/* none open: teardown closed fd 0 for each slot never used */
		r->inputs[i].fd = r->inputs[i].direct_fd = -1;
	for (unsigned i = 0; i < cfg->nr_cells; i++) {
		r->cells[i].buf_index = i;
		r->cells[i].buf = r->memory + (size_t)i * cfg->knobs.block_size;
	}

	if (!v->uses_uring)
		return 0;
	ret = setup_uring(r, v->setup_flags | (cfg->knobs.sqpoll ? IORING_SETUP_SQPOLL : 0) |
			  (cfg->knobs.iopoll ? IORING_SETUP_IOPOLL : 0));
	/* Forbidden (seccomp, io_uring_disabled) or absent: the same hashes from pread(), one cell. */
	if (v->falls_back && (ret == -ENOSYS || ret == -EPERM)) {
		r->fallback_reason = ret;
		cfg->nr_cells = 1;
		cfg->hashing = cfg->knobs.parallel_hash ? HASH_PARALLEL : HASH_SERIAL;	/* one cell: no next block */
		cfg->knobs.fixed_buffers = cfg->knobs.fixed_file = cfg->knobs.iopoll = false;
		return 0;
	}
	if (ret < 0)
		return ret;
	r->have_uring = true;
	if (cfg->knobs.fixed_buffers && (ret = register_buffers(r)) < 0)
		return ret;
	/* Files with blocks in the ring, and the one being opened, each need a slot. */
	if (cfg->knobs.fixed_file && (ret = io_uring_register_files_sparse(&r->uring, cfg->nr_cells + 1)) < 0)
		return ret;
	if (v->uses_eventfd) {
		r->eventfd = eventfd(0, EFD_CLOEXEC);
		if (r->eventfd < 0)
			return -errno;
		ret = io_uring_register_eventfd(&r->uring, r->eventfd);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * An O_DIRECT read becomes one segment per physically contiguous piece of its
 * buffer: with 4K pages a virtio disk's 254 segments cap a request near 1M,
 * with 2M pages at its 4M max_sectors. Only once a file is read with O_DIRECT:
 * many small buffered files touch 4K of a cell, not a 2M page each. Refused
 * (THP off): 4K pages, as without it.
 */
void ring_use_huge_pages(struct ring *r)
{
	if (r->cfg->knobs.huge_pages && !r->huge_pages_advised)
		madvise(r->memory, r->cfg->knobs.block_size * r->cfg->nr_cells, MADV_HUGEPAGE);
	r->huge_pages_advised = true;
}

void ring_teardown(struct ring *r)
{
	side_pool_stop(&r->side_pool);
	fault_slowdown(r->bytes_hashed + r->progress.memory_bytes);
	if (r->have_uring)
		io_uring_queue_exit(&r->uring);
	if (r->eventfd >= 0)
		close(r->eventfd);
	for (unsigned i = 0; r->inputs && i < r->nr_slots; i++)
		input_free(&r->inputs[i]);
	free(r->inputs);
	free(r->hash_jobs);
	free(r->free_buffers);
	free(r->cells);
	free(r->memory);
}

/* Descriptors already open, so that the files opened ahead stay under RLIMIT_NOFILE. */
static unsigned count_open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!dir)
		return 64;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n > 3 ? n - 3 : 0;	/* ., .. and the directory's own */
}

/*
 * Never fail a file for EMFILE: the producer opens a file only while fewer
 * than this are open, leaving room for a checksum file, the trace and a spare.
 */
unsigned open_files_allowed(void)
{
	struct rlimit limit;
	rlim_t used = count_open_fds() + 3;

	if (getrlimit(RLIMIT_NOFILE, &limit) || limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > UINT32_MAX)
		return UINT32_MAX;
	return limit.rlim_cur > used + 1 ? limit.rlim_cur - used : 1;
}


/*
 * --verbose, at the end: how the blocks read through the ring were hashed, when
 * uring_b3sum chose (the per-file shares are in --effective).
 */
void ring_say_hashing(const struct ring *r, const struct variant *v)
{
	if (!v->hashes_when_behind || !r->have_uring || r->cfg->knobs.parallel_hash || r->cfg->knobs.serial_hash ||
	    !r->bytes_hashed)
		return;
	if (r->cfg->hashing == HASH_WHEN_BEHIND)
		fprintf(stderr, "%s: %.0f%% of the %.1f MiB read through the ring hashed on %u cores (the next block "
			"was read already), the rest on one\n", r->cfg->prog, 100.0 * r->parallel_bytes / r->bytes_hashed,
			r->bytes_hashed / 1048576.0, r->cfg->hash_threads);
	else
		fprintf(stderr, "%s: the blocks read through the ring hashed on one core: %s\n", r->cfg->prog,
			r->cfg->hash_threads > 1 ? "one buffer, no next block to see" :
			"one hashing thread (the CPUs it may use, or --num-threads)");
}
