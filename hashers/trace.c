/* SPDX-License-Identifier: MIT */
/* The trace recorder: one CSV row per consumer run, the article's instrumented build on demand. */
#include <errno.h>
#include <time.h>

#include "ringsum.h"

int trace_open(struct trace *t, const char *path)
{
	t->out = fopen(path, "we");
	if (!t->out)
		return -errno;
	fputs("time_ns,in_flight,reaped,blocks_hashed,bytes_hashed,peak_in_flight\n", t->out);
	return 0;
}

int trace_close(struct trace *t)
{
	int ret = 0;

	if (t->out && (ferror(t->out) | fclose(t->out)))
		ret = errno ? -errno : -EIO;
	t->out = NULL;
	return ret;
}

void trace_consumer_run(struct trace *t, unsigned in_flight, unsigned reaped,
			unsigned blocks_hashed, uint64_t bytes_hashed, unsigned peak_in_flight)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	fprintf(t->out, "%llu,%u,%u,%u,%llu,%u\n",
		(unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec,
		in_flight, reaped, blocks_hashed, (unsigned long long)bytes_hashed, peak_in_flight);
}
