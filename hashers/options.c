/* SPDX-License-Identifier: MIT */
/*
 * Command line of every hasher: b3sum's options and ours, or the article's
 * eight positional arguments (the article's variants, or after --positional).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringsum.h"

#define ARTICLE_ARGC 9			/* PROG FILE and seven numbers */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define HELP_COLUMN 31

#define NUMBER_ROW(NAME, TYPE, SHORT, NEEDS, DEF, MIN, MAX, LABEL, POS, ARG, NOUN, UNIT, BIG, HELP) \
	{ .name = #NAME, .type = KNOB_##TYPE, .short_name = SHORT, .needs = KNOB_NEEDS_##NEEDS, .def = DEF, \
	  .min = MIN, .max = MAX, .label = LABEL, .positional = POS, .arg = ARG, .noun = NOUN, .unit = UNIT, \
	  .too_large = BIG, .help = HELP, .offset = offsetof(struct knobs, NAME) },
#define FLAG_ROW(NAME, SHORT, NEEDS, LABEL, POS, HELP) \
	{ .name = #NAME, .type = KNOB_FLAG, .short_name = SHORT, .needs = KNOB_NEEDS_##NEEDS, .max = 1, \
	  .label = LABEL, .positional = POS, .help = HELP, .offset = offsetof(struct knobs, NAME) },

static const struct knob knob_table[] = {
	RINGSUM_NUMBERS(NUMBER_ROW)
	RINGSUM_FLAGS(FLAG_ROW)
};
#define NR_KNOBS ARRAY_SIZE(knob_table)
_Static_assert(NR_KNOBS <= 64, "struct options' given has a bit per knob");

/* Options without a short form; a knob's is OPT_KNOB + its row. */
enum {
	OPT_KEYED = 256, OPT_DERIVE_KEY, OPT_SEEK, OPT_NUM_THREADS, OPT_NO_MMAP, OPT_NO_NAMES,
	OPT_RAW, OPT_TAG, OPT_POSITIONAL, OPT_KNOBS_JSON, OPT_PROGRESS, OPT_EFFECTIVE, OPT_KNOB = 512,
};

/* b3sum's options and ours that are not knobs; the knobs' come first (long_options()). */
static const struct option other_options[] = {
	{ "keyed",			no_argument,		NULL, OPT_KEYED },
	{ "derive-key",			required_argument,	NULL, OPT_DERIVE_KEY },
	{ "length",			required_argument,	NULL, 'l' },
	{ "seek",			required_argument,	NULL, OPT_SEEK },
	{ "num-threads",		required_argument,	NULL, OPT_NUM_THREADS },
	{ "no-mmap",			no_argument,		NULL, OPT_NO_MMAP },
	{ "no-names",			no_argument,		NULL, OPT_NO_NAMES },
	{ "raw",			no_argument,		NULL, OPT_RAW },
	{ "tag",			no_argument,		NULL, OPT_TAG },
	{ "positional",			no_argument,		NULL, OPT_POSITIONAL },
	{ "check",			no_argument,		NULL, 'c' },
	{ "recursive",			no_argument,		NULL, 'r' },
	{ "quiet",			no_argument,		NULL, 'Q' },
	{ "verbose",			no_argument,		NULL, 'v' },
	{ "progress",			no_argument,		NULL, OPT_PROGRESS },
	{ "path",			required_argument,	NULL, 'p' },
	{ "trace",			required_argument,	NULL, 't' },
	{ "effective",			required_argument,	NULL, OPT_EFFECTIVE },
	{ "knobs-json",			no_argument,		NULL, OPT_KNOBS_JSON },
	{ "help",			no_argument,		NULL, 'h' },
	{ "version",			no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* getopt_long's table: the knobs' options, named from their fields, then the others. */
struct option_table {
	char names[NR_KNOBS][32];
	struct option options[NR_KNOBS + ARRAY_SIZE(other_options)];
	char short_options[64];
};

static void knob_option_name(const struct knob *k, char *buf, size_t size)
{
	snprintf(buf, size, "%s", k->name);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = '-';
}

static void build_option_table(struct option_table *t)
{
	size_t used = snprintf(t->short_options, sizeof(t->short_options), ":l:crvhV");

	for (size_t i = 0; i < NR_KNOBS; i++) {
		const struct knob *k = &knob_table[i];
		bool value = k->type != KNOB_FLAG;

		knob_option_name(k, t->names[i], sizeof(t->names[i]));
		t->options[i] = (struct option){ t->names[i], value ? required_argument : no_argument, NULL,
						 k->short_name ? k->short_name : OPT_KNOB + (int)i };
		if (k->short_name)
			used += snprintf(t->short_options + used, sizeof(t->short_options) - used, "%c%s",
					 k->short_name, value ? ":" : "");
	}
	memcpy(&t->options[NR_KNOBS], other_options, sizeof(other_options));
}

static const struct knob *knob_of_option(int c)
{
	for (size_t i = 0; i < NR_KNOBS; i++)
		if (c == (knob_table[i].short_name ? knob_table[i].short_name : OPT_KNOB + (int)i))
			return &knob_table[i];
	return NULL;
}

static unsigned long long knob_get(const struct knobs *knobs, const struct knob *k)
{
	const char *field = (const char *)knobs + k->offset;

	switch (k->type) {
	case KNOB_SIZE: return *(const size_t *)field;
	case KNOB_FLAG: return *(const bool *)field;
	default: return *(const unsigned *)field;
	}
}

static void knob_set(struct knobs *knobs, const struct knob *k, unsigned long long value)
{
	char *field = (char *)knobs + k->offset;

	switch (k->type) {
	case KNOB_SIZE: *(size_t *)field = value; break;
	case KNOB_FLAG: *(bool *)field = value; break;
	default: *(unsigned *)field = value; break;
	}
}

static bool knob_used(const struct knob *k, const struct variant *v)
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

static unsigned buffers_per_depth(const struct variant *v)
{
	return v->buffers_per_depth ? v->buffers_per_depth : 1;
}

/* The table's defaults with the variant's own; buffers stay 0: a multiple of the queue depth. */
static void knob_defaults(struct knobs *knobs, const struct variant *v, bool article)
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

/* 512K, 2M, 1000: the shortest exact form, as --block-size takes it. */
static void format_size(unsigned long long bytes, char *buf, size_t size)
{
	static const char suffix[] = "GMK";

	for (int i = 0; i < 3; i++) {
		unsigned shift = 30 - 10 * i;

		if (bytes && !(bytes & ((1ull << shift) - 1))) {
			snprintf(buf, size, "%llu%c", bytes >> shift, suffix[i]);
			return;
		}
	}
	snprintf(buf, size, "%llu", bytes);
}

static void describe_default(const struct knob *k, const struct knobs *defaults, const struct variant *v,
			     char *buf, size_t size)
{
	unsigned per_depth = buffers_per_depth(v);

	switch (k->type) {
	case KNOB_FLAG:
		snprintf(buf, size, "default %s", knob_get(defaults, k) ? "on" : "off");
		break;
	case KNOB_SIZE:
		snprintf(buf, size, "default ");
		format_size(knob_get(defaults, k), buf + 8, size - 8);
		break;
	case KNOB_BUFFERS:
		if (per_depth == 1)
			snprintf(buf, size, "default: the queue depth");
		else if (per_depth == 2)
			snprintf(buf, size, "default: twice the queue depth");
		else
			snprintf(buf, size, "default: %u times the queue depth", per_depth);
		break;
	default:
		snprintf(buf, size, "default %llu", knob_get(defaults, k));
	}
}

/* One knob's lines: "  -b, --block-size SIZE  help (default 512K)", more lines of help below. */
static void knob_usage(FILE *out, const struct knob *k, const struct knobs *defaults, const struct variant *v)
{
	char name[32], left[64], def[64];
	const char *help = k->help, *newline = strchr(help, '\n');
	int first = newline ? (int)(newline - help) : (int)strlen(help);

	knob_option_name(k, name, sizeof(name));
	if (k->short_name)
		snprintf(left, sizeof(left), "  -%c, --%s%s%s", k->short_name, name, k->arg ? " " : "", k->arg ? k->arg : "");
	else
		snprintf(left, sizeof(left), "      --%s%s%s", name, k->arg ? " " : "", k->arg ? k->arg : "");
	describe_default(k, defaults, v, def, sizeof(def));
	fprintf(out, "%-*s %.*s (%s)\n", HELP_COLUMN - 1, left, first, help, def);
	while (newline) {
		help = newline + 1;
		newline = strchr(help, '\n');
		first = newline ? (int)(newline - help) : (int)strlen(help);
		fprintf(out, "%*s%.*s\n", HELP_COLUMN, "", first, help);
	}
}

static void usage(FILE *out, const char *prog, const struct variant *v)
{
	char size[32], tree[256] = "";
	struct knobs defaults;

	knob_defaults(&defaults, v, false);
	if (v->tree_direct_min) {
		format_size(v->tree_direct_min, size, sizeof(size));
		snprintf(tree, sizeof(tree), "%*s%s: --direct-min 0 (its default) is %s with it, --check or\n"
			 "%*smore than one FILE (small cold files)\n", HELP_COLUMN, "", v->name, size, HELP_COLUMN, "");
	}
	fprintf(out,
		"Usage: %s [OPTION]... [FILE]...\n"
		"   or: %s %sFILE BLOCK_KIB QUEUE_DEPTH USE_O_DIRECT PROCESS_IN_INNER_LOOP BUFFERS USE_DRAIN USE_LINK\n"
		"Print the BLAKE3 hash of each FILE, as b3sum 1.8.7 does, reading it through a ring of buffers.\n"
		"With no FILE, or when FILE is -, read standard input. Block devices are read through the ring,\n"
		"pipes and character devices as streams.\n\n"
		"b3sum's options:\n"
		"      --keyed                  keyed mode, the 32-byte key read from stdin (default off)\n"
		"      --derive-key CONTEXT     key derivation mode with this context (default off)\n"
		"  -l, --length LEN             output bytes, before hex encoding (default 32)\n"
		"      --seek SEEK              first output byte, before hex encoding (default 0)\n"
		"      --num-threads NUM        most threads hashing at once (default 0: one per core)\n"
		"      --no-mmap                never hash from a mapping of the page cache (default off)\n"
		"      --no-names               print hashes without names (default off)\n"
		"      --raw                    write the raw output bytes of one FILE, not hex (default off)\n"
		"      --tag                    BSD style: BLAKE3 (FILE) = HASH (default off)\n"
		"  -c, --check                  uring_b3sum: FILEs are b3sum checksum files; verify them (default off)\n"
		"      --quiet                  uring_b3sum --check: print only failures (default off)\n\n"
		"Ours:\n"
		"      --progress               bytes and files done, rate and time left, on stderr when it is a\n"
		"                               terminal, at most 4 times a second, cleared before each output\n"
		"                               line (default off)\n"
		"  -r, --recursive              hash every regular file under each FILE that is a directory, depth\n"
		"                               first, the paths in byte order (as find DIR -type f | LC_ALL=C sort);\n"
		"                               symlinks inside are neither followed nor hashed, FIFOs, sockets\n"
		"                               and devices skipped (default off: a directory is an error)\n"
		"%s\n"
		"The ring's options:\n",
		prog, prog, v->chooses_path ? "--positional " : "",
		tree);
	for (size_t i = 0; i < NR_KNOBS; i++)
		knob_usage(out, &knob_table[i], &defaults, v);
	fprintf(out,
		"  -v, --verbose                uring_b3sum: say how each file is read (default off)\n"
		"      --path auto|memory|ring  uring_b3sum: hash from the page cache (memory) or read through\n"
		"                               the ring (default auto: memory when the file is all in the page\n"
		"                               cache and --direct is not given)\n"
		"      --trace FILE             write a CSV row per consumer run: time_ns, in_flight, reaped,\n"
		"                               blocks_hashed, bytes_hashed, peak_in_flight (default off)\n"
		"      --effective FILE         write how each file was really read, a JSON line each: path,\n"
		"                               block size, depth, buffers, O_DIRECT, huge pages (default off)\n"
		"      --positional             the article's form follows: FILE and seven numbers (default off;\n"
		"                               the article's variants take that form without it)\n"
		"      --knobs-json             describe the ring's options as JSON, for the harness\n"
		"  -h, --help                   show this help\n"
		"  -V, --version                show versions of this program, BLAKE3 and liburing\n\n"
		"Knobs a variant does not use (queue depth for the pread loop) are checked, then ignored.\n"
		"In the positional form BLOCK_KIB is in KiB and the flags are 0 or 1.\n"
		"Exit status: 0 if every FILE was hashed (or checked OK), 1 if any failed, 2 for a bad command line.\n");
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void json_default(FILE *out, const struct knob *k, const struct knobs *defaults, unsigned per_depth)
{
	if (k->type == KNOB_FLAG)
		fputs(knob_get(defaults, k) ? "true" : "false", out);
	else if (k->type == KNOB_BUFFERS && per_depth == 1)
		fputs("\"queue_depth\"", out);
	else if (k->type == KNOB_BUFFERS)
		fprintf(out, "\"%u*queue_depth\"", per_depth);
	else
		fprintf(out, "%llu", knob_get(defaults, k));
}

/*
 * --knobs-json: the table as the harness reads it. "default" is the article's
 * (the harness's), "variant_default" this program's own; "used" says whether
 * this variant acts on the knob ("needs" says what it takes).
 */
static void knobs_json(FILE *out, const struct variant *v)
{
	static const char *const types[] = { "size", "count", "buffers", "flag" };
	static const char *const needs[] = { "all", "io_uring", "a loop that waits on completions",
					      "hashing from the page cache" };
	struct knobs article, own;
	char name[32];

	knob_defaults(&article, v, true);
	knob_defaults(&own, v, false);
	fprintf(out, "{\"variant\": ");
	json_string(out, v->name);
	fprintf(out, ", \"knobs\": [");
	for (size_t i = 0; i < NR_KNOBS; i++) {
		const struct knob *k = &knob_table[i];

		knob_option_name(k, name, sizeof(name));
		fprintf(out, "%s\n  {\"name\": \"%s\", \"option\": \"--%s\", \"short\": ", i ? "," : "", k->name, name);
		if (k->short_name)
			fprintf(out, "\"-%c\"", k->short_name);
		else
			fputs("null", out);
		fprintf(out, ", \"type\": \"%s\", \"default\": ", types[k->type]);
		json_default(out, k, &article, 1);
		fprintf(out, ", \"variant_default\": ");
		json_default(out, k, &own, buffers_per_depth(v));
		fprintf(out, ", \"min\": %llu, \"max\": %llu, \"label\": \"%s\", \"positional\": %d, "
			"\"needs\": \"%s\", \"used\": %s, \"help\": ", k->min, k->max, k->label, k->positional,
			needs[k->needs], knob_used(k, v) ? "true" : "false");
		json_string(out, k->help);
		fputc('}', out);
	}
	fprintf(out, "\n]}\n");
}

static int bad_usage(const char *prog, const char *fmt, ...)
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
static bool parse_count(const char *text, unsigned long long *value)
{
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	*value = strtoull(text, &end, 10);
	return errno == 0 && *end == '\0';
}

/* A u64 as b3sum's clap parses it, with Rust's words when it is not one. */
static int parse_u64(const char *text, uint64_t *value, const char *option, const char *prog)
{
	unsigned long long v;

	if (!*text)
		return bad_usage(prog, "invalid value '' for '%s': cannot parse integer from empty string", option);
	if (text[strspn(text, "0123456789")] != '\0')
		return bad_usage(prog, "invalid value '%s' for '%s': invalid digit found in string", text, option);
	if (!parse_count(text, &v))
		return bad_usage(prog, "invalid value '%s' for '%s': number too large to fit in target type", text, option);
	*value = v;
	return -1;
}

/* Bytes, with an optional binary K, M or G suffix. */
static bool parse_size(const char *text, size_t *bytes)
{
	unsigned long long value;
	unsigned shift = 0;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno)
		return false;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	}
	if (*end != '\0' || value > (SIZE_MAX >> shift))
		return false;
	*bytes = (size_t)value << shift;
	return true;
}

static bool parse_unsigned(const char *text, unsigned *value)
{
	unsigned long long v;

	if (!parse_count(text, &v) || v > UINT32_MAX)
		return false;
	*value = (unsigned)v;
	return true;
}

/* FILE and seven numbers, no options: the article's command lines run as they were. */
static bool is_article_form(int argc, char **argv)
{
	unsigned long long ignored;

	if (argc != ARTICLE_ARGC || argv[1][0] == '-')
		return false;
	for (int i = 2; i < argc; i++)
		if (!parse_count(argv[i], &ignored))
			return false;
	return true;
}

static int parse_article_form(struct options *opts, char **argv, const char *prog)
{
	static const char *const names[] = { "BLOCK_KIB", "QUEUE_DEPTH", "USE_O_DIRECT",
		"PROCESS_IN_INNER_LOOP", "BUFFERS", "USE_DRAIN", "USE_LINK" };
	unsigned long long v[7];

	for (int i = 0; i < 7; i++) {
		parse_count(argv[i + 2], &v[i]);
		if ((i == 2 || i == 3 || i >= 5) && v[i] > 1)
			return bad_usage(prog, "%s must be 0 or 1, got %s", names[i], argv[i + 2]);
		if ((i == 1 || i == 4) && v[i] > UINT32_MAX)
			return bad_usage(prog, "%s is too large: %s", names[i], argv[i + 2]);
	}
	if (v[0] > (MAX_BLOCK_SIZE >> 10))
		return bad_usage(prog, "BLOCK_KIB %s is larger than the 1G maximum", argv[2]);
	opts->knobs.block_size = v[0] << 10;
	opts->knobs.queue_depth = v[1];
	opts->knobs.direct = v[2];
	opts->knobs.process_in_inner_loop = v[3];
	opts->knobs.buffers = v[4];
	for (size_t i = 0; i < NR_KNOBS; i++)
		opts->given |= (uint64_t)(knob_table[i].positional != 0) << i;
	opts->knobs.drain = v[5];
	opts->knobs.link = v[6];
	opts->files = &argv[1];
	opts->nr_files = 1;
	return -1;
}

/* getopt says '?' both for an unknown option and for a value given to a flag, as in --direct=1. */
static int unknown_option(const char *arg, int optopt_seen, const struct option *options, const char *prog)
{
	const char *equals = strchr(arg, '=');

	if (!strncmp(arg, "--", 2) && equals) {
		for (const struct option *o = options; o->name; o++)
			if (strlen(o->name) == (size_t)(equals - arg - 2) && !strncmp(o->name, arg + 2, equals - arg - 2))
				return bad_usage(prog, "option '--%s' takes no value", o->name);
	}
	if (optopt_seen && strncmp(arg, "--", 2))
		return bad_usage(prog, "unknown option '-%c'", optopt_seen);
	return bad_usage(prog, "unknown option '%s'", arg);
}

/* A knob's value; --name VALUE or a flag's --name. */
static int parse_knob(struct options *opts, const struct knob *k, const char *value, const char *prog)
{
	char name[32];
	size_t size;
	unsigned count;

	knob_option_name(k, name, sizeof(name));
	opts->given |= 1ull << (k - knob_table);
	switch (k->type) {
	case KNOB_FLAG:
		knob_set(&opts->knobs, k, true);
		break;
	case KNOB_SIZE:
		if (!parse_size(value, &size))
			return bad_usage(prog, "invalid --%s '%s': expected bytes with an optional K, M or G suffix",
					 name, value);
		knob_set(&opts->knobs, k, size);
		break;
	default:
		if (!parse_unsigned(value, &count))
			return bad_usage(prog, "invalid --%s '%s': expected a whole number", name, value);
		knob_set(&opts->knobs, k, count);
	}
	return -1;
}

static int parse_long_form(struct options *opts, int argc, char **argv, const char *prog, const struct variant *v)
{
	struct option_table table;
	const struct knob *k;
	uint64_t threads;
	int c, ret;

	build_option_table(&table);
	optind = 0;	/* glibc: start afresh, as this runs once for a defaults file and once for argv */
	opterr = 0;
	while ((c = getopt_long(argc, argv, table.short_options, table.options, NULL)) != -1) {
		if ((k = knob_of_option(c))) {
			if ((ret = parse_knob(opts, k, optarg, prog)) >= 0)
				return ret;
			continue;
		}
		switch (c) {
		case OPT_KEYED: opts->keyed = true; break;
		case OPT_DERIVE_KEY: opts->derive_key = optarg; break;
		case 'l':
			if ((ret = parse_u64(optarg, &opts->format.length, "--length <LEN>", prog)) >= 0)
				return ret;
			opts->length_given = true;
			break;
		case OPT_SEEK:
			if ((ret = parse_u64(optarg, &opts->format.seek, "--seek <SEEK>", prog)) >= 0)
				return ret;
			break;
		case OPT_NUM_THREADS:
			if ((ret = parse_u64(optarg, &threads, "--num-threads <NUM>", prog)) >= 0)
				return ret;
			opts->num_threads = threads > UINT32_MAX ? UINT32_MAX : threads;
			break;
		case OPT_NO_MMAP: opts->no_mmap = true; break;
		case OPT_NO_NAMES: opts->format.no_names = true; break;
		case OPT_RAW: opts->format.raw = true; break;
		case OPT_TAG: opts->format.tag = true; break;
		case OPT_POSITIONAL:
			return bad_usage(prog, "--positional comes first, followed by FILE and seven numbers");
		case 'c': opts->check = true; break;
		case 'r': opts->recursive = true; break;
		case 'Q': opts->quiet = true; break;
		case 'v': opts->verbose = true; break;
		case OPT_PROGRESS: opts->progress = true; break;
		case 'p':
			if (!strcmp(optarg, "auto"))
				opts->path_choice = PATH_AUTO;
			else if (!strcmp(optarg, "memory"))
				opts->path_choice = PATH_MEMORY;
			else if (!strcmp(optarg, "ring"))
				opts->path_choice = PATH_RING;
			else
				return bad_usage(prog, "invalid --path '%s': expected auto, memory or ring", optarg);
			opts->path_given = true;
			break;
		case 't': opts->trace_path = optarg; break;
		case OPT_EFFECTIVE: opts->effective_path = optarg; break;
		case OPT_KNOBS_JSON:
			knobs_json(stdout, v);
			return 0;
		case 'h':
			usage(stdout, prog, v);
			return 0;
		case 'V':
			printf("%s (ringsum %s) BLAKE3 %s liburing %s\n", prog, RINGSUM_VERSION,
			       blake3_version(), RINGSUM_LIBURING_VERSION);
			return 0;
		case ':':
			return bad_usage(prog, "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option(argv[optind - 1], optopt, table.options, prog);
		}
	}
	opts->files = &argv[optind];
	opts->nr_files = argc - optind;
	return -1;
}

/* clap's conflicts and requirements, in b3sum's words. */
static int check_b3sum_rules(const struct options *opts, const char *prog)
{
	static const char *const check_conflicts[] = { "--derive-key <CONTEXT>", "--keyed", "--length <LEN>",
						       "--raw", "--tag", "--no-names" };
	const bool given[] = { opts->derive_key != NULL, opts->keyed, opts->length_given,
			       opts->format.raw, opts->format.tag, opts->format.no_names };

	for (unsigned i = 0; opts->check && i < sizeof(given) / sizeof(given[0]); i++)
		if (given[i])
			return bad_usage(prog, "the argument '--check' cannot be used with '%s'", check_conflicts[i]);
	if (opts->keyed && opts->derive_key)
		return bad_usage(prog, "the argument '--keyed' cannot be used with '--derive-key <CONTEXT>'");
	if (opts->keyed && opts->nr_files == 0)
		return bad_usage(prog, "--keyed reads the key from stdin: the following required arguments were not provided: <FILE>...");
	if (opts->quiet && !opts->check)
		return bad_usage(prog, "--quiet goes with --check: the following required arguments were not provided: --check");
	if (opts->recursive && opts->check)
		return bad_usage(prog, "the argument '--check' cannot be used with '--recursive': a checksum file names its files");
	if (opts->recursive && opts->format.raw)
		return bad_usage(prog, "the argument '--raw' cannot be used with '--recursive': --raw writes one file's bytes");
	return -1;
}

/* Every number within its row's limits, said in its row's words. */
static int check_ranges(const struct knobs *knobs, const char *prog)
{
	for (size_t i = 0; i < NR_KNOBS; i++) {
		const struct knob *k = &knob_table[i];
		unsigned long long value = knob_get(knobs, k);

		if (value < k->min)
			return bad_usage(prog, "%s must be at least %llu%s%s", k->noun, k->min, *k->unit ? " " : "", k->unit);
		if (value > k->max)
			return bad_usage(prog, "%s %llu %s", k->noun, value, k->too_large);
	}
	return -1;
}

/*
 * The ring's buffers are allocated whole before the first file, whatever its
 * size: more than the machine's memory fails every run, so it is the options'
 * fault and said as such (a small file would not show it).
 */
static int check_buffer_memory(const struct knobs *knobs, const struct variant *v, const char *prog)
{
	unsigned long long memory = (unsigned long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
	unsigned long long bytes = (unsigned long long)knobs->block_size * knobs->buffers;

	if (!v->uses_uring || bytes <= memory)
		return -1;
	return bad_usage(prog, "--block-size %zu x --buffers %u is %llu MiB of buffers, more than this "
			 "machine's %llu MiB of memory", knobs->block_size, knobs->buffers, bytes >> 20, memory >> 20);
}

static int validate(const struct options *opts, const struct variant *v, const char *prog)
{
	if (check_ranges(&opts->knobs, prog) >= 0)
		return 2;
	if (opts->knobs.direct && opts->knobs.block_size % DIRECT_ALIGN)
		return bad_usage(prog, "O_DIRECT needs a block size that is a multiple of %u bytes, got %zu",
				 DIRECT_ALIGN, opts->knobs.block_size);
	if (opts->knobs.fixed_buffers && opts->knobs.buffers > MAX_FIXED_BUFFERS)
		return bad_usage(prog, "--fixed-buffers registers at most %u buffers, got %u",
				 MAX_FIXED_BUFFERS, opts->knobs.buffers);
	if (opts->knobs.direct && opts->knobs.buffered)
		return bad_usage(prog, "--direct and --buffered contradict each other");
	if (opts->knobs.parallel_hash && opts->knobs.serial_hash)
		return bad_usage(prog, "--parallel-hash and --serial-hash contradict each other");
	if (opts->knobs.iopoll && !opts->knobs.direct)
		return bad_usage(prog, "--iopoll needs --direct");
	if (opts->knobs.iopoll && v->uses_uring && !v->waits_on_completions)
		return bad_usage(prog, "--iopoll needs a loop that waits on completions; use the single-threaded variant");
	if (!v->chooses_path && (opts->check || opts->quiet || opts->verbose || opts->path_given))
		return bad_usage(prog, "--check, --quiet, --verbose and --path belong to uring_b3sum");
	if (check_b3sum_rules(opts, prog) >= 0)
		return 2;
	if (opts->no_mmap && opts->path_choice == PATH_MEMORY)
		return bad_usage(prog, "--no-mmap and --path memory contradict each other");
#ifdef RINGSUM_NO_TRACE
	if (opts->trace_path)
		return bad_usage(prog, "this build has no trace code; --trace is not available");
#endif
	return check_buffer_memory(&opts->knobs, v, prog);
}

/*
 * uring_b3sum's own defaults, such as `ringsum tune --install` writes: long
 * options, one per line, # comments; the command line comes after them.
 * $URING_B3SUM_OPTIONS names the file, else $XDG_CONFIG_HOME/ringsum/ or
 * ~/.config/ringsum/uring_b3sum.options is used if it exists and can be read.
 */
static int parse_defaults_file(struct options *opts, const char *prog, const struct variant *v)
{
	const char *path = getenv("URING_B3SUM_OPTIONS"), *base = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char default_path[PATH_MAX], where[PATH_MAX + 64], *words[64], *line, *word, *lines, *fields;
	int nr_words = 1, ret;
	size_t used;
	FILE *f;

	if (!path) {
		snprintf(default_path, sizeof(default_path), "%s%s/ringsum/uring_b3sum.options",
			 base ? base : home ? home : "", base ? "" : "/.config");
		path = default_path;
	}
	f = fopen(path, "re");
	/* The usual place counts only if it is there to read (sudo and setpriv keep a HOME they cannot read). */
	if (!f && path == default_path && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
		return -1;
	if (!f)
		return bad_usage(prog, "%s: %s", path, strerror(errno));
	used = fread(opts->defaults_text, 1, sizeof(opts->defaults_text) - 1, f);
	opts->defaults_text[used] = '\0';
	ret = feof(f) ? -1 : bad_usage(prog, "%s: longer than %zu bytes", path, sizeof(opts->defaults_text) - 1);
	fclose(f);
	if (ret >= 0)
		return ret;
	snprintf(where, sizeof(where), "%.16s: %.*s", prog, PATH_MAX, path);
	words[0] = (char *)prog;
	for (line = strtok_r(opts->defaults_text, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines)) {
		if (line[strspn(line, " \t")] == '#')
			continue;
		for (word = strtok_r(line, " \t", &fields); word; word = strtok_r(NULL, " \t", &fields)) {
			if (nr_words == 64)
				return bad_usage(where, "more than 63 words");
			words[nr_words++] = word;
		}
	}
	ret = parse_long_form(opts, nr_words, words, where, v);
	if (ret < 0 && opts->nr_files)
		return bad_usage(where, "unexpected '%s': only options belong here", opts->files[0]);
	return ret;
}

static bool knob_given(const struct options *opts, size_t offset)
{
	for (size_t i = 0; i < NR_KNOBS; i++)
		if (knob_table[i].offset == offset)
			return opts->given >> i & 1;
	return false;
}

/* The name messages give the program: as it was invoked, like coreutils, so that installed as b3sum it says b3sum. */
static const char *program_name(int argc, char **argv, const struct variant *v)
{
	const char *slash;

	if (argc < 1 || !argv[0] || !argv[0][0])
		return v->name;
	slash = strrchr(argv[0], '/');
	return slash && slash[1] ? slash + 1 : argv[0];
}

/* Returns -1 to go on, or the exit status to leave with at once. */
int parse_options(struct options *opts, int argc, char **argv, const struct variant *v)
{
	int ret = -1;

	memset(opts, 0, sizeof(*opts));
	opts->prog = program_name(argc, argv, v);
	knob_defaults(&opts->knobs, v, false);
	opts->format.length = BLAKE3_OUT_LEN;
	/* uring_b3sum takes its arguments as b3sum does: files named 1 2 0 0 1 0 0 are files. */
	if (argc == ARTICLE_ARGC + 1 && !strcmp(argv[1], "--positional") && is_article_form(argc - 1, argv + 1)) {
		ret = parse_article_form(opts, argv + 1, opts->prog);
	} else if (!v->chooses_path && is_article_form(argc, argv)) {
		ret = parse_article_form(opts, argv, opts->prog);
	} else {
		if (v->chooses_path)
			ret = parse_defaults_file(opts, opts->prog, v);
		if (ret < 0)
			ret = parse_long_form(opts, argc, argv, opts->prog, v);
	}
	if (ret >= 0)
		return ret;
	/* many files: a list (xargs) and a checksum file are a tree's files too */
	if ((opts->recursive || opts->check || opts->nr_files > 1) && v->tree_direct_min && !opts->knobs.direct_min)
		opts->knobs.direct_min = v->tree_direct_min;
	if (!knob_given(opts, offsetof(struct knobs, buffers)))
		opts->knobs.buffers = opts->knobs.queue_depth * buffers_per_depth(v);
	ret = validate(opts, v, opts->prog);
	if (ret >= 0)
		return ret;
	if (opts->nr_files == 0) {
		static char *standard_input[] = { "-", NULL };

		opts->files = standard_input;
		opts->nr_files = 1;
	}
	return -1;
}
