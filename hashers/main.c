/* SPDX-License-Identifier: MIT */
/* What every hasher does around its main loop: set up once, then pass every file through the ring. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ringsum.h"

static void describe_uring_failure(char *buf, size_t size, int err)
{
	char disabled[16] = "unknown";
	int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd >= 0) {
		n = read(fd, disabled, sizeof(disabled) - 1);
		disabled[n > 0 ? n : 0] = '\0';
		disabled[strcspn(disabled, "\n")] = '\0';
		close(fd);
	}
	snprintf(buf, size, "io_uring unavailable: %s (kernel.io_uring_disabled=%s)", strerror(-err), disabled);
}

static void print_setup_error(const char *prog, int err)
{
	char reason[160];

	if (err != -ENOSYS && err != -EPERM) {
		fprintf(stderr, "%s: cannot set up the ring: %s\n", prog, strerror(-err));
		return;
	}
	describe_uring_failure(reason, sizeof(reason), err);
	fprintf(stderr, "%s: %s\n", prog, reason);
}

/* b3sum's --keyed: exactly 32 bytes on stdin, read before anything else. */
static int read_key(uint8_t key[BLAKE3_KEY_LEN])
{
	size_t n = 0;
	uint8_t extra;
	ssize_t got;

	while (n < BLAKE3_KEY_LEN && (got = read(STDIN_FILENO, key + n, BLAKE3_KEY_LEN - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return fprintf(stderr, "Error: %s (os error %d)\n", strerror(errno), errno), -1;
		n += got;
	}
	if (n < BLAKE3_KEY_LEN)
		return fprintf(stderr, "Error: expected %d key bytes from stdin, found %zu\n", BLAKE3_KEY_LEN, n), -1;
	while ((got = read(STDIN_FILENO, &extra, 1)) < 0 && errno == EINTR)
		;
	if (got > 0)
		return fprintf(stderr, "Error: read more than %d key bytes from stdin\n", BLAKE3_KEY_LEN), -1;
	return 0;
}

static int init_base_hasher(struct ring *r, const struct options *opts)
{
	uint8_t key[BLAKE3_KEY_LEN];

	if (opts->keyed) {
		if (read_key(key))
			return -1;
		blake3_hasher_init_keyed(&r->base_hasher, key);
	} else if (opts->derive_key) {
		blake3_hasher_init_derive_key(&r->base_hasher, opts->derive_key);
	} else {
		blake3_hasher_init(&r->base_hasher);
	}
	return 0;
}

/* A failure of the ring itself fails every file it had not finished, and those still to come. */
static void fail_unfinished(struct ring *r, int err)
{
	struct input *in;

	for (unsigned i = r->consumer_input; i < atomic_load(&r->nr_inputs); i++)
		print_error(r->cfg->prog, input_at(r, i)->path, err);
	r->producer_input = atomic_load(&r->nr_inputs);
	while ((in = ring_next_input(r))) {
		if (!in->error)
			print_error(r->cfg->prog, in->path, err);
		r->producer_input++;
	}
}

static int hash_all(struct ring *r, const struct options *opts, const struct variant *v)
{
	struct source source = { .files = opts->files, .nr_files = opts->nr_files, .list = opts->list,
				 .check = opts->check, .recursive = opts->recursive };
	char reason[160];
	int ret, status = 0;

	if (r->fallback_reason && opts->verbose) {
		describe_uring_failure(reason, sizeof(reason), r->fallback_reason);
		fprintf(stderr, "%s: %s; reading with pread() instead\n", r->cfg->prog, reason);
	}
	ring_start(r, &source);
	ring_window_start(r);
	ring_side_trial_start(r, opts->nr_files);
	ret = (r->have_uring || !v->uses_uring ? v->hash_stream : hash_stream_pread)(r);
	ring_drain(r);
	progress_end(&r->progress);
	if (opts->verbose) {
		ring_say_window(r);
		ring_say_depth(r);
		ring_say_side_trial(r);
		ring_say_waits(r);
		ring_say_hashing(r, v);
	}
	if (ret < 0)
		fail_unfinished(r, ret);
	if (ret < 0 || r->failed_inputs)
		status = 1;
	fflush(stdout);
	if (source.fatal && source.list_failed) {
		print_error(r->cfg->prog, name_list_name(source.list), source.fatal);
		status = 1;
	} else if (source.fatal) {
		fprintf(stderr, "Error: %s\n", describe_error(source.fatal, reason, sizeof(reason)));
		status = 1;
	} else if (opts->check && r->failed_inputs) {
		fprintf(stderr, "%s: WARNING: %u computed checksum%s did NOT match\n",
			r->cfg->prog, r->failed_inputs, r->failed_inputs == 1 ? "" : "s");
	}
	source_close(&source);
	return status;
}

/* The options parsed: set up, hash every input, tear down; the exit status. */
static int run(struct options *opts, const struct variant *v)
{
	struct ring_config config;
	struct ring ring;
	int ret, status;

	if (opts->format.raw && opts->nr_files > 1) {
		fprintf(stderr, "Error: Only one filename can be provided when using --raw\n");
		return 1;
	}
	if (opts->num_threads)
		hash_limit_threads(opts->num_threads);
	ret = ring_setup(&ring, &config, opts, v);
	if (ret < 0) {
		print_setup_error(opts->prog, ret);
		ring_teardown(&ring);
		return 1;
	}
	if (init_base_hasher(&ring, opts)) {
		ring_teardown(&ring);
		return 1;
	}
	if (opts->trace_path && (ret = trace_open(&ring.trace, opts->trace_path)) < 0) {
		print_error(opts->prog, opts->trace_path, ret);
		ring_teardown(&ring);
		return 1;
	}
	if (opts->effective_path &&
	    (ret = effective_open(&ring.effective, opts->effective_path, opts->effective_summary)) < 0) {
		print_error(opts->prog, opts->effective_path, ret);
		ring_teardown(&ring);
		return 1;
	}
	status = hash_all(&ring, opts, v);
	if ((ret = effective_close(&ring.effective)) < 0) {
		print_error(opts->prog, opts->effective_path, ret);
		status = 1;
	}
	if ((ret = trace_close(&ring.trace)) < 0) {
		print_error(opts->prog, opts->trace_path, ret);
		status = 1;
	}
	ring_teardown(&ring);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", opts->prog, strerror(errno));
		status = 1;
	}
	return status;
}

int ringsum_main(int argc, char **argv, const struct variant *v)
{
	struct options opts;
	int ret = parse_options(&opts, argc, argv, v);

	if (ret >= 0)
		return ret;
	ret = run(&opts, v);
	name_list_close(opts.list);
	return ret;
}
