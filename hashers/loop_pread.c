/* SPDX-License-Identifier: MIT */
/* A plain pread() loop: b3sum_pread's, and uring_b3sum's when io_uring cannot be set up. */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ringsum.h"

/* One block: all of it (a file), or what one read() gives (a stream, 0 at its end). */
static ssize_t read_block(struct ring *r, struct input *in, struct cell *c, uint64_t offset, size_t want)
{
	size_t length = in->direct ? r->cfg->knobs.block_size : want;
	ssize_t got;

	c->got = 0;
	while (c->got < want) {
		/* O_DIRECT reads resume from an aligned offset, reading a few bytes again. */
		size_t start = in->direct ? c->got & ~(size_t)(DIRECT_ALIGN - 1) : c->got;

		struct iovec iov = { c->buf + start, length - start };

		got = in->stream ? read(in->fd, c->buf, want) : preadv2(in->fd, &iov, 1, offset + start, in->rw_flags);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0 && errno == EOPNOTSUPP && in->rw_flags)
			return -ERR_DONTCACHE_UNSUPPORTED;
		if (got < 0)
			return errno == EINVAL && in->direct ? -ERR_DIRECT_UNSUPPORTED : -errno;
		if (in->stream)
			return got;
		if (got == 0)
			return -ERR_FILE_SHRANK;
		c->got = start + got;
	}
	return c->got > want ? -ERR_FILE_LONGER : (ssize_t)want;
}

int hash_stream_pread(struct ring *r)
{
	struct cell *c = &r->cells[0];
	struct input *in;
	ssize_t got;

	while ((in = ring_next_input(r))) {
		ring_open_input(r, in, r->producer_input++);
		for (uint64_t block = 0; block < in->nr_blocks && !in->error; block++) {
			size_t want = block_length(r, in, block);

			if (!want)
				break;
			got = read_block(r, in, c, block * r->cfg->knobs.block_size, want);
			if (got <= 0) {
				in->error = got;
				break;
			}
			hash_update(r, &in->hasher, c->buf, got);
			r->bytes_hashed += got;
			progress_tick(r);
			if (trace_on(&r->trace))
				trace_consumer_run(&r->trace, 0, 1, 1, r->bytes_hashed, 1);
		}
		input_finish(r, in);
	}
	return 0;
}
