/* SPDX-License-Identifier: MIT */
/*
 * A file's way through the ring: opened by the producer, finished by the consumer,
 * in order. The ring calls in here; nothing here calls the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ringsum.h"

static const char *const staging_names[] = {
	[STAGE_IN_PLACE] = "in-place", [STAGE_READ_ONCE] = "read-once", [STAGE_COPY] = "copy",
	[STAGE_PREFETCH] = "prefetch", [STAGE_MEASURED] = "measured",
};

/* A file hashed from its mapping takes part in the mapped files' trial; one read, in the ring blocks'. */
static enum trial_of trial_of(const struct input *in)
{
	return in->from_memory ? TRIAL_MAPPED : TRIAL_RING;
}

static enum staging staging_given(const struct ring *r, const struct input *in)
{
	return in->from_memory ? r->cfg->staging : r->cfg->ring_staging;
}

/* The staging a file's tasks take: the one given, or its trial's winner once it has one (in *trial). */
static enum staging staging_now(const struct ring *r, const struct input *in, struct staging_trial *trial)
{
	enum staging given = staging_given(r, in);

	staging_trial_result(trial_of(in), trial);
	return given == STAGE_MEASURED ? trial->winner : given;
}

/* --verbose, once a trial: what it found on the first tasks (a cached file's, or the ring's), and what it cost. */
static void say_trial(struct ring *r, const struct input *in)
{
	struct staging_trial trial;
	enum trial_of which = trial_of(in);

	staging_trial_result(which, &trial);
	if (!r->cfg->verbose || r->trial_said[which] || !trial.decided)
		return;
	r->trial_said[which] = true;
	/*
	 * In place, kept unless prefetching wins clearly, can be kept with
	 * prefetching the faster at the median: the trial's other tasks then ran
	 * faster than the winner's rate, and it cost nothing.
	 */
	fprintf(stderr, "%s: %s: staging %s, measured here%s: prefetched / in place %.3f, the median of %u pairs "
		"of tasks, prefetched faster in %u; the trial's %llu tasks cost %.2f ms of CPU beyond the winner's "
		"rate%s\n", r->cfg->prog, in->path, staging_names[trial.winner],
		which == TRIAL_RING ? " on the ring's blocks" : "", trial.ratio, trial.pairs,
		trial.prefetch_wins, trial.tasks, trial.cost_ns > 0 ? trial.cost_ns / 1e6 : 0.0,
		trial.cost_ns < 0 ? " (nothing: the other staging's tasks ran faster, not by enough to be taken)" : "");
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

/* What kind of input it is, and how many bytes it has when that is known ahead. */
static int classify(struct input *in)
{
	if (fstat(in->fd, &in->st))
		return -errno;
	/* stdin is read from where it stands, whatever it is, as b3sum reads it */
	if (in->borrowed_fd && !S_ISDIR(in->st.st_mode)) {
		in->stream = true;
		return 0;
	}
	switch (in->st.st_mode & S_IFMT) {
	case S_IFREG:
		in->size = in->st.st_size;
		return 0;
	case S_IFBLK:
		return ioctl(in->fd, BLKGETSIZE64, &in->size) ? -errno : 0;
	case S_IFCHR:
	case S_IFIFO:
		in->stream = true;
		return 0;
	case S_IFDIR:
		return -EISDIR;
	default:
		return -ERR_NOT_REGULAR;
	}
}

static const char *hashing_name(const struct ring *r, const struct input *in)
{
	if (in->hashed_beside)
		return "beside";	/* on one core, beside other files */
	if (in->from_memory || r->cfg->hashing == HASH_PARALLEL)
		return "parallel";
	return r->cfg->hashing == HASH_WHEN_BEHIND ? "when-behind" : "serial";
}

/*
 * A file partly in the page cache, of over a block: each block from the cache
 * if all of it is there, else with O_DIRECT, where all of it went to the device
 * before: 0.62-0.95 of that time with 25-70% cached, 0.95-1.00 with 10% (Zen 5,
 * docs/cold-path/partial-cache-zen5). O_DIRECT through a second descriptor, the
 * file reopened through /proc/self/fd (the same file whatever its path does).
 */
static void open_mixed(struct ring *r, struct input *in)
{
	char self[32];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", in->fd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);
	if (fd < 0)
		return;		/* the whole file with O_DIRECT, as before */
	in->direct_fd = fd;
	in->mixed = true;
	in->direct = false;
	atomic_fetch_add(&r->open_files, 1);
	in->probe_by_reading = !cachestat_answers(in->fd);
	if (in->probe_by_reading)	/* asked once, not for every block: range_cached() */
		posix_fadvise(in->fd, 0, 0, POSIX_FADV_RANDOM);
}

/* Why a file took its path: an option, what it is, or how much of it the page cache holds (buf: room for a size). */
static const char *why_path(const struct ring *r, const struct input *in, bool regular, bool cached,
			    char *buf, size_t size)
{
	size_t min = r->cfg->knobs.memory_min;

	if (in->stream)
		return "";
	if (!regular)
		return ": not a regular file";
	if (in->mixed)
		return ": part of it in the page cache";
	if (r->cfg->path_choice == PATH_MEMORY)
		return ": --path memory";
	if (r->cfg->path_choice == PATH_RING)
		return ": --path ring or --no-mmap";
	if (r->cfg->knobs.direct)
		return ": --direct";
	if (in->from_memory)
		return ": 3/4 of it or more in the page cache";
	if (!cached)
		return ": under 3/4 of it in the page cache";
	if (min % 1024)
		snprintf(buf, size, ": in the page cache, but under --memory-min %zu bytes", min);
	else
		snprintf(buf, size, ": in the page cache, but under --memory-min %zu%c", min % (1u << 20) ? min >> 10 : min >> 20,
			 min % (1u << 20) ? 'K' : 'M');
	return buf;
}

static void say_how(const struct ring *r, const struct input *in, const char *why)
{
	struct staging_trial trial;
	enum staging how = staging_now(r, in, &trial);

	if (in->from_memory)
		fprintf(stderr, "%s: %s: hashing from the page cache (mmap, %u thread%s, staging %s)%s\n", r->cfg->prog,
			in->path, r->cfg->hash_threads, r->cfg->hash_threads == 1 ? "" : "s", how == STAGE_MEASURED ? "in place or prefetched, measured on its first tasks"
			: staging_names[how], why);
	else if (!r->have_uring)
		fprintf(stderr, "%s: %s: reading with pread() (%zu-byte blocks)%s\n", r->cfg->prog, in->path,
			r->cfg->knobs.block_size, why);
	else
		fprintf(stderr, "%s: %s: reading %sthrough the io_uring ring (%zu%s blocks, %u deep, %u buffers%s)%s\n",
			r->cfg->prog, in->path, in->stream ? "a stream, one read at a time, " : "",
			r->cfg->knobs.block_size % 1024 ? r->cfg->knobs.block_size : r->cfg->knobs.block_size >> 10,
			r->cfg->knobs.block_size % 1024 ? "-byte" : "K", atomic_load(&r->depth_limit), atomic_load(&r->cells_limit),
			in->mixed ? ", each block from the page cache if all there, else O_DIRECT" : in->direct ? ", O_DIRECT" : "", why);
}

/* What the harness records of the execution (runs.csv): the choices made for this file, by its place in the list. */
static void report_effective(struct ring *r, const struct input *in)
{
	struct staging_trial found;
	enum staging how = staging_now(r, in, &found);
	struct effective_file f = {
		.how = {
			.path = in->from_memory ? "memory" : !r->have_uring ? "pread" : in->stream ? "stream" : "ring",
			.block_size = r->cfg->knobs.block_size,
			.queue_depth = r->have_uring ? (int)atomic_load(&r->depth_limit) : -1,
			.buffers = atomic_load(&r->cells_limit),
			.direct = in->mixed ? "\"mixed\"" : in->direct ? "true" : "false",
			.huge_pages = r->cfg->knobs.huge_pages && r->huge_pages_advised && !in->from_memory,
			.hashing = hashing_name(r, in),
			.hash_threads = in->from_memory || r->cfg->hashing != HASH_SERIAL ? r->cfg->hash_threads : 1,
		},
		.index = r->consumer_input,
		.ring_bytes = in->ring_bytes, .parallel_bytes = in->parallel_bytes, .cached_blocks = in->cached_blocks,
	};

	if (in->hashed_beside) {	/* in place, with no trial: ring_consume.c */
		how = STAGE_IN_PLACE;
		found.decided = false;
	}
	f.how.staging = staging_names[how];	/* "measured": still measuring at its end, its tasks a half each */
	if (staging_given(r, in) == STAGE_MEASURED && found.decided)
		f.trial = &found;
	effective_add(&r->effective, &f);
}

/* 0 is "a block": the default, so that a sweep passing every knob keeps it. */
static uint64_t direct_min(const struct ring *r)
{
	uint64_t min = r->cfg->knobs.direct_min;

	return min && min < r->cfg->knobs.block_size ? min : r->cfg->knobs.block_size;
}

static int open_input(struct ring *r, struct input *in, unsigned index)
{
	enum cached state;
	bool regular, cached;
	char why[80];
	int ret;

	if (!strcmp(in->path, "-")) {
		if (r->cfg->keyed)
			return -ERR_KEYED_STDIN;
		in->fd = STDIN_FILENO;
		in->borrowed_fd = true;
	} else {
		/* O_NONBLOCK so that a FIFO cannot block the open; it is cleared before any read. */
		in->fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (in->walked ? O_NOFOLLOW : 0));
		if (in->fd < 0)
			return -errno;
		atomic_fetch_add(&r->open_files, 1);
	}
	if ((ret = classify(in)) < 0)
		return ret;
	regular = S_ISREG(in->st.st_mode) && !in->borrowed_fd;
	state = regular && r->cfg->path_choice != PATH_MEMORY && !r->cfg->knobs.direct ? cache_state(in->fd, in->size)
										      : CACHED_NONE;
	cached = state == CACHED_MOSTLY;
	/*
	 * Asking for O_DIRECT is asking for the ring: auto only takes the page
	 * cache without it, and not for a file under --memory-min, where mapping,
	 * faulting and unmapping it cost more than the copy of a read. Its
	 * default, 1280K on any number of hashing threads, rests on the ledger's
	 * hot tree rows (ledger-memory-min) and docs/cold-path/memory-min-*-run,
	 * ring / memory: 1M files through the ring on the Zen 5 (8f50662391e2:
	 * 0.71-0.95 in every state but one, read back, 1.03) and on the Zen 3
	 * (add026ac3c38: 0.88-1.03 on 2026-11-29, 1.01-1.07 the day before);
	 * 1536K files from memory on both (1.06-1.15 on two cores, 1.06-1.10 on
	 * one; over 205 rounds on the Zen 3's two cores a tie, 0.99, and 1M 0.96:
	 * docs/cold-path/memmin-aa-zen3); 1280K from memory on two cores (1.07,
	 * 1.23), a tie or the ring on one (0.86-1.00). The worst a rule of size
	 * leaves is 1280K on one core; 1M, before, left the Zen 5's 1M trees at
	 * 1.15-1.40. A cached tree's record (tune-trees-cached.toml) sets it.
	 */
	in->from_memory = regular && (r->cfg->path_choice == PATH_MEMORY ||
				      (r->cfg->path_choice == PATH_AUTO && !r->cfg->knobs.direct && in->size >= r->cfg->knobs.memory_min && cached));
	/*
	 * A cold file read into the page cache costs a fresh page per 4K, and in a
	 * VM with free page reporting each fresh page can fault in the host too:
	 * O_DIRECT into the ring's own buffers skips both (docs/cold-path.md).
	 */
	in->direct = !in->stream && !in->from_memory &&
		     (r->cfg->knobs.direct || (r->cfg->direct_when_cold && regular && in->size >= direct_min(r) && !cached));
	if (in->direct && !r->cfg->knobs.direct && state == CACHED_PART && in->size > r->cfg->knobs.block_size &&
	    !r->cfg->knobs.fixed_file)
		open_mixed(r, in);
	/* F_SETFL sets every flag it can change: this clears O_NONBLOCK. */
	if (!in->borrowed_fd && fcntl(in->fd, F_SETFL, in->direct ? O_DIRECT : 0)) {
		if (errno != EINVAL || !in->direct)
			return -errno;
		if (r->cfg->knobs.direct)
			return -ERR_DIRECT_UNSUPPORTED;
		in->direct = false;	/* O_DIRECT when cold is a preference: this filesystem reads buffered */
		if (fcntl(in->fd, F_SETFL, 0))
			return -errno;
	}
	in->rw_flags = r->cfg->knobs.dontcache && regular && !in->direct && !in->stream ? RWF_DONTCACHE : 0;
	if (r->cfg->verbose)
		say_how(r, in, why_path(r, in, regular, cached, why, sizeof(why)));
	in->opened = true;
	if (in->from_memory)
		return 0;
	/* Buffered reads live on readahead: saying the file is read in order doubles its window. */
	if (r->cfg->knobs.fadvise_sequential && !in->direct && !in->stream)
		posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (r->cfg->knobs.iopoll)
		return in->stream ? -ERR_NOT_POLLABLE : check_pollable(&in->st);
	if (r->cfg->knobs.fixed_file) {
		/* Fewer files than cells + 1 can be between the heads, so their slots never collide. */
		in->fixed_slot = index % (r->cfg->nr_cells + 1);
		return io_uring_register_files_update(&r->uring, in->fixed_slot, &in->fd, 1) < 0 ? -EBADF : 0;
	}
	return 0;
}

void input_open(struct ring *r, struct input *in, unsigned index)
{
	in->nr_blocks = 1;
	in->completions = 0;
	in->ring_bytes = in->parallel_bytes = 0;
	in->from_memory = false;
	in->mixed = in->probe_by_reading = false;
	in->direct_fd = -1;
	in->cached_blocks = 0;
	in->mapping = NULL;
	in->hashed_beside = false;
	in->opened = false;
	in->end_seen = false;
	in->hasher = r->base_hasher;
	if (!in->error)		/* a bad --check line has nothing to open */
		in->error = open_input(r, in, index);
	if (!in->error && in->stream)
		in->nr_blocks = UINT64_MAX;
	else if (!in->error && !in->from_memory && in->size > 0)
		in->nr_blocks = (in->size + r->cfg->knobs.block_size - 1) / r->cfg->knobs.block_size;
}

size_t block_length(const struct ring *r, const struct input *in, uint64_t block)
{
	uint64_t offset = block * r->cfg->knobs.block_size;

	if (in->error || in->from_memory)
		return 0;
	if (in->stream)
		return r->cfg->knobs.block_size;
	if (offset >= in->size)
		return 0;
	return in->size - offset < r->cfg->knobs.block_size ? in->size - offset : r->cfg->knobs.block_size;
}

/* b3sum reads to end of file: a file whose size undercounts its data must not get a hash. */
static int check_end_of_file(const struct input *in)
{
	char probe;
	ssize_t n;

	if (in->direct && fcntl(in->fd, F_SETFL, 0))
		return -errno;
	do
		n = pread(in->fd, &probe, 1, in->size);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? -ERR_FILE_LONGER : 0;
}

static int check_unchanged(const struct input *in)
{
	struct stat now;
	int ret;

	if (in->stream)
		return 0;
	if (!in->end_seen && (ret = check_end_of_file(in)))
		return ret;
	if (S_ISBLK(in->st.st_mode))
		return 0;
	if (fstat(in->fd, &now))
		return -errno;
	if (now.st_size != in->st.st_size || now.st_mtim.tv_sec != in->st.st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != in->st.st_mtim.tv_nsec)
		return -ERR_FILE_CHANGED;
	return 0;
}

/* The file's line: its hash, its error, or with --check its verdict. */
static void print_result(struct ring *r, struct input *in)
{
	uint8_t hash[BLAKE3_OUT_LEN];
	bool match;

	if (in->error) {
		r->failed_inputs++;
		if (is_line_error(in->error))
			print_line_error(r->cfg->prog, in->error);
		else if (in->checking)
			print_check_failure(in->shown, in->error);
		else
			print_error(r->cfg->prog, in->path, in->error);
		return;
	}
	if (!in->checking) {
		print_hash(&r->cfg->format, in->path, &in->hasher);
		return;
	}
	/* b3sum compares the output at --seek */
	blake3_hasher_finalize_seek(&in->hasher, r->cfg->format.seek, hash, BLAKE3_OUT_LEN);
	match = !memcmp(hash, in->expected, BLAKE3_OUT_LEN);
	if (!match)
		r->failed_inputs++;
	if (!match || !r->cfg->quiet)
		print_check(in->shown, match ? "OK" : "FAILED");
}

void input_finish(struct ring *r, struct input *in)
{
	if (!in->error && in->from_memory) {
		if (!in->hashed_beside)
			in->error = input_hash_mapped(r, in);
		r->progress.memory_bytes += in->size;
	}
	if (staging_given(r, in) == STAGE_MEASURED)
		say_trial(r, in);
	if (r->cfg->verbose && in->mixed)
		fprintf(stderr, "%s: %s: %llu of its %llu blocks read from the page cache, the rest with O_DIRECT\n",
			r->cfg->prog, in->path, (unsigned long long)in->cached_blocks, (unsigned long long)in->nr_blocks);
	if (!in->error)
		in->error = check_unchanged(in);
	if (in->opened && r->effective.out)
		report_effective(r, in);
	if (in->fd >= 0 && !in->borrowed_fd) {
		close(in->fd);
		atomic_fetch_sub(&r->open_files, 1);
	}
	in->fd = -1;
	if (in->direct_fd >= 0) {
		close(in->direct_fd);
		atomic_fetch_sub(&r->open_files, 1);
	}
	in->direct_fd = -1;
	r->consumer_input++;
	progress_hide(&r->progress, in->error && (is_line_error(in->error) || !in->checking));
	print_result(r, in);
	progress_unhide(&r->progress);
}
