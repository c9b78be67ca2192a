/* SPDX-License-Identifier: MIT */
/*
 * What the harness records of an execution: how each file was really read.
 * --effective writes a JSON line per file; --effective-summary a line per
 * distinct way, with its files counted and bytes summed, written at the end.
 * On a cached tree of 16,384 64K files the per-file lines cost 1.02-1.09 of
 * the hash's time (docs/cold-path/effective-cost-zen3), a cost the baselines
 * never pay; a summary is a few lines whatever the tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringsum.h"

struct effective_sum {
	struct effective_choice how;
	unsigned files;
	struct staging_trial trial;	/* the last file's, if decided */
	bool trial_decided;
	uint64_t ring_bytes, parallel_bytes, cached_blocks;
};

int effective_open(struct effective *e, const char *path, bool summary)
{
	e->out = fopen(path, "we");
	if (!e->out)
		return -errno;
	e->summary = summary;
	return 0;
}

static bool same_choice(const struct effective_choice *a, const struct effective_choice *b)
{
	return !strcmp(a->path, b->path) && a->block_size == b->block_size && a->queue_depth == b->queue_depth &&
	       a->buffers == b->buffers && !strcmp(a->direct, b->direct) && a->huge_pages == b->huge_pages &&
	       !strcmp(a->hashing, b->hashing) && a->hash_threads == b->hash_threads && !strcmp(a->staging, b->staging);
}

/* The fields both forms share: {"path": ... "staging_trial": ..., without the braces' end. */
static void write_choice(FILE *out, const struct effective_choice *how, const struct staging_trial *trial)
{
	fprintf(out, "\"path\": \"%s\", \"block_size\": %zu, ", how->path, how->block_size);
	if (how->queue_depth < 0)	/* the pread loop has none */
		fputs("\"queue_depth\": null, ", out);
	else
		fprintf(out, "\"queue_depth\": %d, ", how->queue_depth);
	fprintf(out, "\"buffers\": %u, \"direct\": %s, \"huge_pages\": %s, \"hashing\": \"%s\", \"hash_threads\": %u, "
		"\"staging\": \"%s\", \"staging_trial\": ", how->buffers, how->direct, how->huge_pages ? "true" : "false",
		how->hashing, how->hash_threads, how->staging);
	if (!trial)	/* a staging given, or still measuring */
		fputs("null", out);
	else
		fprintf(out, "{\"pairs\": %u, \"prefetch_over_in_place\": %.4f, \"prefetch_faster_in\": %u, "
			"\"tasks\": %llu, \"cost_ns\": %.0f, \"trials\": %u}", trial->pairs, trial->ratio,
			trial->prefetch_wins, trial->tasks, trial->cost_ns, trial->trials);
}

static void write_bytes(FILE *out, uint64_t ring_bytes, uint64_t parallel_bytes, uint64_t cached_blocks)
{
	fprintf(out, ", \"ring_bytes\": %llu, \"parallel_bytes\": %llu, \"cached_blocks\": %llu}\n",
		(unsigned long long)ring_bytes, (unsigned long long)parallel_bytes, (unsigned long long)cached_blocks);
}

static int add_to_sum(struct effective *e, const struct effective_file *f)
{
	struct effective_sum *s = NULL;

	for (unsigned i = 0; i < e->nr && !s; i++)
		if (same_choice(&e->sums[i].how, &f->how))
			s = &e->sums[i];
	if (!s) {
		if (e->nr == e->cap) {
			unsigned cap = e->cap ? 2 * e->cap : 1;	/* a run takes a way or a few */
			struct effective_sum *sums = realloc(e->sums, cap * sizeof(*sums));

			if (!sums)
				return -ENOMEM;
			e->sums = sums;
			e->cap = cap;
		}
		s = &e->sums[e->nr++];
		*s = (struct effective_sum){ .how = f->how };
	}
	s->files++;
	if (f->trial) {
		s->trial = *f->trial;
		s->trial_decided = true;
	}
	s->ring_bytes += f->ring_bytes;
	s->parallel_bytes += f->parallel_bytes;
	s->cached_blocks += f->cached_blocks;
	return 0;
}

/* The consumer's, as each file is finished: its line, or its share of its way's. */
void effective_add(struct effective *e, const struct effective_file *f)
{
	int ret;

	if (!e->summary) {
		fprintf(e->out, "{\"index\": %u, ", f->index);
		write_choice(e->out, &f->how, f->trial);
		write_bytes(e->out, f->ring_bytes, f->parallel_bytes, f->cached_blocks);
	} else if (!e->error && (ret = add_to_sum(e, f)) < 0) {
		e->error = ret;
	}
}

int effective_close(struct effective *e)
{
	int ret = e->error;

	for (unsigned i = 0; e->out && !ret && i < e->nr; i++) {
		const struct effective_sum *s = &e->sums[i];

		fprintf(e->out, "{\"files\": %u, ", s->files);
		write_choice(e->out, &s->how, s->trial_decided ? &s->trial : NULL);
		write_bytes(e->out, s->ring_bytes, s->parallel_bytes, s->cached_blocks);
	}
	if (e->out && (ferror(e->out) | fclose(e->out)) && !ret)
		ret = errno ? -errno : -EIO;
	free(e->sums);
	*e = (struct effective){ 0 };
	return ret;
}
