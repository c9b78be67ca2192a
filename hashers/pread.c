/* SPDX-License-Identifier: MIT */
/* b3sum_pread: a plain pread() loop with the same knobs and output, to isolate what io_uring adds. */
#include <errno.h>
#include <unistd.h>

#include "ringsum.h"

static int hash_file(struct ring *r, blake3_hasher *hasher)
{
	struct cell *c = &r->cells[0];
	uint64_t offset = 0;
	ssize_t got;

	while (offset < r->file_size) {
		size_t want = r->file_size - offset < r->block_size ? r->file_size - offset : r->block_size;
		size_t length = r->direct ? r->block_size : want;

		c->got = 0;
		while (c->got < want) {
			/* O_DIRECT reads resume from an aligned offset, reading a few bytes again. */
			size_t start = r->direct ? c->got & ~(size_t)(DIRECT_ALIGN - 1) : c->got;

			got = pread(r->fd, c->buf + start, length - start, offset + start);
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got < 0)
				return errno == EINVAL && r->direct ? -ERR_DIRECT_UNSUPPORTED : -errno;
			if (got == 0)
				return -ERR_FILE_SHRANK;
			c->got = start + got;
		}
		if (c->got > want)
			return -ERR_FILE_LONGER;
		hash_update(r, hasher, c->buf, want);
		offset += want;
		if (trace_on(&r->trace))
			trace_consumer_run(&r->trace, 0, 1, 1, offset);
	}
	return 0;
}

static const struct variant pread_loop = {
	.name = "b3sum_pread",
	.hash_file = hash_file,
};

int main(int argc, char **argv)
{
	return ringsum_main(argc, argv, &pread_loop);
}
