/* SPDX-License-Identifier: MIT */
/* b3sum_pread: a plain pread() loop with the same knobs and output, to isolate what io_uring adds. */
#include <errno.h>
#include <unistd.h>

#include "ringsum.h"

static int read_block(struct ring *r, struct input *in, struct cell *c, uint64_t offset, size_t want)
{
	size_t length = r->direct ? r->block_size : want;
	ssize_t got;

	c->got = 0;
	while (c->got < want) {
		/* O_DIRECT reads resume from an aligned offset, reading a few bytes again. */
		size_t start = r->direct ? c->got & ~(size_t)(DIRECT_ALIGN - 1) : c->got;

		got = pread(in->fd, c->buf + start, length - start, offset + start);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return errno == EINVAL && r->direct ? -ERR_DIRECT_UNSUPPORTED : -errno;
		if (got == 0)
			return -ERR_FILE_SHRANK;
		c->got = start + got;
	}
	return c->got > want ? -ERR_FILE_LONGER : 0;
}

static int hash_stream(struct ring *r)
{
	struct cell *c = &r->cells[0];

	for (unsigned i = 0; i < r->nr_inputs; i++) {
		struct input *in = &r->inputs[i];

		input_open(r, in, i);
		for (uint64_t block = 0; block < in->nr_blocks && !in->error; block++) {
			size_t want = block_length(r, in, block);

			if (!want)
				break;
			in->error = read_block(r, in, c, block * r->block_size, want);
			if (in->error)
				break;
			hash_update(r, &in->hasher, c->buf, want);
			r->bytes_hashed += want;
			if (trace_on(&r->trace))
				trace_consumer_run(&r->trace, 0, 1, 1, r->bytes_hashed);
		}
		input_finish(r, in);
	}
	return 0;
}

static const struct variant pread_loop = {
	.name = "b3sum_pread",
	.hash_stream = hash_stream,
};

int main(int argc, char **argv)
{
	return ringsum_main(argc, argv, &pread_loop);
}
