/* SPDX-License-Identifier: MIT */
/*
 * The knob table of knobs.h, walked for names, defaults and values, with what
 * every parser of the option unit shares (bad_usage(), parse_count()). It
 * calls no other file of the unit: the grammars, --help, the defaults file,
 * wisdom and parse_options() (options.c) build on it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "options_impl.h"

#define NUMBER_ROW(NAME, TYPE, SHORT, NEEDS, DEF, MIN, MAX, LABEL, POS, ARG, NOUN, UNIT, BIG, HELP) \
	{ .name = #NAME, .type = KNOB_##TYPE, .short_name = SHORT, .needs = KNOB_NEEDS_##NEEDS, .def = DEF, \
	  .min = MIN, .max = MAX, .label = LABEL, .positional = POS, .arg = ARG, .noun = NOUN, .unit = UNIT, \
	  .too_large = BIG, .help = HELP, .offset = offsetof(struct knobs, NAME) },
#define FLAG_ROW(NAME, SHORT, NEEDS, LABEL, POS, HELP) \
	{ .name = #NAME, .type = KNOB_FLAG, .short_name = SHORT, .needs = KNOB_NEEDS_##NEEDS, .max = 1, \
	  .label = LABEL, .positional = POS, .help = HELP, .offset = offsetof(struct knobs, NAME) },

const struct knob knob_table[NR_KNOBS] = {
	RINGSUM_NUMBERS(NUMBER_ROW)
	RINGSUM_FLAGS(FLAG_ROW)
};
_Static_assert(NR_KNOBS <= 64, "struct options' given has a bit per knob");

void knob_option_name(const struct knob *k, char *buf, size_t size)
{
	snprintf(buf, size, "%s", k->name);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = '-';
}

unsigned long long knob_get(const struct knobs *knobs, const struct knob *k)
{
	const char *field = (const char *)knobs + k->offset;

	switch (k->type) {
	case KNOB_SIZE: return *(const size_t *)field;
	case KNOB_FLAG: return *(const bool *)field;
	default: return *(const unsigned *)field;
	}
}

void knob_set(struct knobs *knobs, const struct knob *k, unsigned long long value)
{
	char *field = (char *)knobs + k->offset;

	switch (k->type) {
	case KNOB_SIZE: *(size_t *)field = value; break;
	case KNOB_FLAG: *(bool *)field = value; break;
	default: *(unsigned *)field = value; break;
	}
}

bool knob_used(const struct knob *k, const struct variant *v)
{
	switch (k->needs) {
	case KNOB_NEEDS_URING: return v->uses_uring;
	case KNOB_NEEDS_WAITS: return v->waits_on_completions;
	case KNOB_NEEDS_MEMORY: return v->chooses_path;
	default: return true;
	}
}

/* Flags the variant has no use for are off: its loop never has to ask. */
void knobs_for_variant(struct knobs *knobs, const struct variant *v)
{
	for (size_t i = 0; i < NR_KNOBS; i++)
		if (knob_table[i].type == KNOB_FLAG && !knob_used(&knob_table[i], v))
			knob_set(knobs, &knob_table[i], false);
}

unsigned buffers_per_depth(const struct variant *v)
{
	return v->buffers_per_depth ? v->buffers_per_depth : 1;
}

/* The table's defaults with the variant's own; buffers stay 0: a multiple of the queue depth. */
void knob_defaults(struct knobs *knobs, const struct variant *v, bool article)
{
	memset(knobs, 0, sizeof(*knobs));
	for (size_t i = 0; i < NR_KNOBS; i++)
		knob_set(knobs, &knob_table[i], knob_table[i].def);
	if (!article && v->queue_depth)
		knobs->queue_depth = v->queue_depth;
	if (!article && v->block_size)
		knobs->block_size = v->block_size;
	if (!article)
		knobs->huge_pages = v->huge_pages;
}

int bad_usage(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see --help)\n");
	return 2;
}

/* A whole decimal number, nothing before or after it. */
bool parse_count(const char *text, unsigned long long *value)
{
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	*value = strtoull(text, &end, 10);
	return errno == 0 && *end == '\0';
}

/* The kinds of work uring_b3sum's wisdom keeps a record for (wisdom.c), and the knobs each decides. */
static const char *const work_names[] = {
	[WORK_COLD_FILE] = "cold-file", [WORK_CACHED_FILE] = "cached-file",
	[WORK_COLD_TREE] = "cold-tree", [WORK_CACHED_TREE] = "cached-tree",
};

/* Which kinds of work a knob's value is measured in (a bit per enum wisdom_work); 0: never from wisdom. */
unsigned wisdom_works(const struct knob *k)
{
	if (!strcmp(k->name, "direct") || !strcmp(k->name, "buffered") || !strcmp(k->name, "iopoll"))
		return 0;
	/* the small-file rules: which cold files skip the page cache, which cached ones are mapped */
	if (!strcmp(k->name, "direct_min"))
		return 1u << WORK_COLD_TREE;
	if (!strcmp(k->name, "memory_min"))
		return 1u << WORK_CACHED_TREE;
	if (k->needs == KNOB_NEEDS_MEMORY)
		return 1u << WORK_CACHED_FILE | 1u << WORK_CACHED_TREE;	/* a cached file hashed from its mapping */
	/* the ring's: a cached tree's small files go through it too, so a cold tree's record is not theirs */
	return 1u << WORK_COLD_FILE | 1u << WORK_COLD_TREE | 1u << WORK_CACHED_TREE;
}

const char *wisdom_work_name(enum wisdom_work work)
{
	return work_names[work];
}
