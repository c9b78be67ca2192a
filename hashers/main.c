/* SPDX-License-Identifier: MIT */
/* What every hasher does around its main loop: set up once, then open, hash and print each file. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ringsum.h"

static int open_input(const char *path, bool direct, int *fd, struct stat *st)
{
	int flags;

	/* O_NONBLOCK so that a FIFO cannot block the open; it is cleared before any read. */
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (*fd < 0)
		return -errno;
	if (fstat(*fd, st))
		return -errno;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -ERR_NOT_REGULAR;
	flags = fcntl(*fd, F_GETFL);
	flags = (flags & ~O_NONBLOCK) | (direct ? O_DIRECT : 0);
	if (fcntl(*fd, F_SETFL, flags))
		return errno == EINVAL && direct ? -ERR_DIRECT_UNSUPPORTED : -errno;
	return 0;
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

static bool changed(const struct stat *before, const struct stat *after)
{
	return before->st_size != after->st_size ||
	       before->st_mtim.tv_sec != after->st_mtim.tv_sec ||
	       before->st_mtim.tv_nsec != after->st_mtim.tv_nsec;
}

static int hash_one(struct ring *r, const struct variant *v, const char *path, bool direct)
{
	uint8_t hash[BLAKE3_OUT_LEN];
	blake3_hasher hasher;
	struct stat before, after;
	int fd, ret;

	ret = open_input(path, direct, &fd, &before);
	if (!ret) {
		ret = ring_start(r, fd, before.st_size);
		blake3_hasher_init(&hasher);
		if (!ret)
			ret = v->hash_file(r, &hasher);
		ring_drain(r);
		if (!ret)
			ret = check_end_of_file(fd, before.st_size);
		if (!ret && fstat(fd, &after))
			ret = -errno;
		if (!ret && changed(&before, &after))
			ret = -ERR_FILE_CHANGED;
	}
	if (fd >= 0)
		close(fd);
	if (ret) {
		print_error(v->name, path, ret);
		return ret;
	}
	blake3_hasher_finalize(&hasher, hash, BLAKE3_OUT_LEN);
	print_hash(path, hash);
	return 0;
}

static void print_setup_error(const struct variant *v, int err)
{
	char disabled[16] = "unknown";
	int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (err != -ENOSYS && err != -EPERM) {
		fprintf(stderr, "%s: cannot set up the ring: %s\n", v->name, strerror(-err));
		return;
	}
	if (fd >= 0) {
		n = read(fd, disabled, sizeof(disabled) - 1);
		disabled[n > 0 ? n : 0] = '\0';
		disabled[strcspn(disabled, "\n")] = '\0';
		close(fd);
	}
	fprintf(stderr, "%s: io_uring unavailable: %s (kernel.io_uring_disabled=%s)\n",
		v->name, strerror(-err), disabled);
}

int ringsum_main(int argc, char **argv, const struct variant *v)
{
	struct options opts;
	struct ring ring;
	int ret, status = 0;

	ret = parse_options(&opts, argc, argv, v);
	if (ret >= 0)
		return ret;
	ret = ring_setup(&ring, &opts, v);
	if (ret < 0) {
		print_setup_error(v, ret);
		ring_teardown(&ring);
		return 1;
	}
	if (opts.trace_path && (ret = trace_open(&ring.trace, opts.trace_path)) < 0) {
		print_error(v->name, opts.trace_path, ret);
		ring_teardown(&ring);
		return 1;
	}
	for (int i = 0; i < opts.nr_files; i++)
		if (hash_one(&ring, v, opts.files[i], opts.direct))
			status = 1;
	if ((ret = trace_close(&ring.trace)) < 0) {
		print_error(v->name, opts.trace_path, ret);
		status = 1;
	}
	ring_teardown(&ring);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", v->name, strerror(errno));
		status = 1;
	}
	return status;
}
