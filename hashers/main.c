/* SPDX-License-Identifier: MIT */
/* What every hasher does around its main loop: set up once, then pass every file through the ring. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ringsum.h"

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

/* The files named on the command line, or with --check those listed in the checksum files. */
static int list_inputs(struct input_list *list, const struct options *opts, const char *prog)
{
	int status = 0;

	for (int i = 0; i < opts->nr_files; i++) {
		if (opts->check) {
			if (read_checkfile(list, opts->files[i], prog))
				status = 1;
		} else if (!input_list_add(list, opts->files[i])) {
			print_error(prog, opts->files[i], -ENOMEM);
			return 1;
		}
	}
	return status;
}

/* A failure of the ring itself fails every file it had not finished. */
static void fail_unfinished(struct ring *r, int err)
{
	for (unsigned i = r->consumer_input; i < r->nr_inputs; i++)
		print_error(r->prog, r->inputs[i].path, err);
}

int ringsum_main(int argc, char **argv, const struct variant *v)
{
	struct input_list list = { 0 };
	struct options opts;
	struct ring ring;
	int ret, status;

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
	status = list_inputs(&list, &opts, v->name);
	ring_start(&ring, list.inputs, list.nr_inputs);
	ret = v->hash_stream(&ring);
	ring_drain(&ring);
	if (ret < 0)
		fail_unfinished(&ring, ret);
	if (ret < 0 || ring.failed_inputs)
		status = 1;
	if (ring.mismatches)
		fprintf(stderr, "%s: WARNING: %u computed checksum%s did NOT match\n",
			v->name, ring.mismatches, ring.mismatches == 1 ? "" : "s");
	if ((ret = trace_close(&ring.trace)) < 0) {
		print_error(v->name, opts.trace_path, ret);
		status = 1;
	}
	ring_teardown(&ring);
	input_list_free(&list);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", v->name, strerror(errno));
		status = 1;
	}
	return status;
}
