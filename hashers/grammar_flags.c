/* SPDX-License-Identifier: MIT */
/* b3sum's options and ours, long and short, with getopt_long: the grammar of every hasher's command line. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "options_impl.h"

/* Options without a short form; a knob's is OPT_KNOB + its row. */
enum {
	OPT_KEYED = 256, OPT_DERIVE_KEY, OPT_SEEK, OPT_NUM_THREADS, OPT_NO_MMAP, OPT_NO_NAMES,
	OPT_RAW, OPT_TAG, OPT_POSITIONAL, OPT_KNOBS_JSON, OPT_PROGRESS, OPT_EFFECTIVE, OPT_NO_WISDOM,
	OPT_WISDOM_KEY, OPT_FILES0_FROM, OPT_EFFECTIVE_SUMMARY, OPT_KNOB = 512,
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
	{ "files0-from",		required_argument,	NULL, OPT_FILES0_FROM },
	{ "quiet",			no_argument,		NULL, 'Q' },
	{ "verbose",			no_argument,		NULL, 'v' },
	{ "progress",			no_argument,		NULL, OPT_PROGRESS },
	{ "path",			required_argument,	NULL, 'p' },
	{ "trace",			required_argument,	NULL, 't' },
	{ "effective",			required_argument,	NULL, OPT_EFFECTIVE },
	{ "effective-summary",		required_argument,	NULL, OPT_EFFECTIVE_SUMMARY },
	{ "knobs-json",			no_argument,		NULL, OPT_KNOBS_JSON },
	{ "no-wisdom",			no_argument,		NULL, OPT_NO_WISDOM },
	{ "wisdom-key",			no_argument,		NULL, OPT_WISDOM_KEY },
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

int parse_long_form(struct options *opts, int argc, char **argv, const char *prog, const struct variant *v)
{
	struct option_table table;
	const struct knob *k;
	uint64_t threads = 0;
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
		case OPT_FILES0_FROM: opts->files0_from = optarg; break;
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
		case OPT_EFFECTIVE:
		case OPT_EFFECTIVE_SUMMARY:
			if (opts->effective_path && opts->effective_summary != (c == OPT_EFFECTIVE_SUMMARY))
				return bad_usage(prog, "--effective and --effective-summary: give one of them");
			opts->effective_path = optarg;
			opts->effective_summary = c == OPT_EFFECTIVE_SUMMARY;
			break;
		case OPT_NO_WISDOM: opts->no_wisdom = true; break;
		case OPT_WISDOM_KEY: opts->wisdom_key = true; break;
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
