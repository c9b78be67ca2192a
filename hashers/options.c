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

#include "ringsum.h"

#define DEFAULT_BLOCK_SIZE (512u << 10)
#define DEFAULT_QUEUE_DEPTH 4u
#define ARTICLE_ARGC 9			/* PROG FILE and seven numbers */

/* Options without a short form. */
enum {
	OPT_KEYED = 256, OPT_DERIVE_KEY, OPT_SEEK, OPT_NUM_THREADS, OPT_NO_MMAP, OPT_NO_NAMES,
	OPT_RAW, OPT_TAG, OPT_POSITIONAL, OPT_DONTCACHE, OPT_HUGE_PAGES, OPT_BUFFERED,
};

static const struct option long_options[] = {
	{ "block-size",			required_argument,	NULL, 'b' },
	{ "queue-depth",		required_argument,	NULL, 'q' },
	{ "buffers",			required_argument,	NULL, 'n' },
	{ "direct",			no_argument,		NULL, 'd' },
	{ "buffered",			no_argument,		NULL, OPT_BUFFERED },
	{ "process-in-inner-loop",	no_argument,		NULL, 'i' },
	{ "drain",			no_argument,		NULL, 'D' },
	{ "link",			no_argument,		NULL, 'L' },
	{ "fixed-buffers",		no_argument,		NULL, 'B' },
	{ "fixed-file",			no_argument,		NULL, 'F' },
	{ "sqpoll",			no_argument,		NULL, 'S' },
	{ "submit-and-wait",		no_argument,		NULL, 'W' },
	{ "iopoll",			no_argument,		NULL, 'P' },
	{ "parallel-hash",		no_argument,		NULL, 'H' },
	{ "fadvise-sequential",		no_argument,		NULL, 'A' },
	{ "dontcache",			no_argument,		NULL, OPT_DONTCACHE },
	{ "huge-pages",			no_argument,		NULL, OPT_HUGE_PAGES },
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
	{ "quiet",			no_argument,		NULL, 'Q' },
	{ "verbose",			no_argument,		NULL, 'v' },
	{ "path",			required_argument,	NULL, 'p' },
	{ "trace",			required_argument,	NULL, 't' },
	{ "help",			no_argument,		NULL, 'h' },
	{ "version",			no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *out, const char *prog, const struct options *opts, const struct variant *v)
{
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
		"The ring's options:\n"
		"  -b, --block-size SIZE        bytes per read and per buffer, K/M/G suffixes (default %zu%s)\n"
		"  -q, --queue-depth N          limit on unfinished read requests (default %u)\n"
		"  -n, --buffers N              buffers in the ring (default: %sthe queue depth)\n"
		"  -d, --direct                 read with O_DIRECT; SIZE must be a multiple of 4096 (default %s)\n"
		"      --buffered               never O_DIRECT, not even for a file that is not cached (default off)\n"
		"      --process-in-inner-loop  hash after every reaped completion (default off)\n"
		"      --drain                  set IOSQE_IO_DRAIN on every read (default off)\n"
		"      --link                   chain the reads of each submission with IOSQE_IO_LINK (default off)\n"
		"      --fixed-buffers          register the buffers, read with READ_FIXED (default off)\n"
		"      --fixed-file             register the file, read with IOSQE_FIXED_FILE (default off)\n"
		"      --sqpoll                 IORING_SETUP_SQPOLL: a kernel thread submits (default off)\n"
		"      --submit-and-wait        submit and wait in one system call (single-threaded; default off)\n"
		"      --iopoll                 IORING_SETUP_IOPOLL (default off); needs --direct, a pollable\n"
		"                               device and the single-threaded loop\n"
		"      --parallel-hash          hash each block on every core, BLAKE3's TBB path (default off);\n"
		"                               best with large power-of-two blocks\n"
		"      --fadvise-sequential     POSIX_FADV_SEQUENTIAL on buffered reads: doubles readahead (default off)\n"
		"      --dontcache              RWF_DONTCACHE on buffered reads: pages leave the page cache once\n"
		"                               hashed, so the same few are reused (Linux 6.14+; default off)\n"
		"      --huge-pages             back the buffers with 2M transparent huge pages: fewer segments\n"
		"                               per O_DIRECT request (default %s)\n"
		"  -v, --verbose                uring_b3sum: say how each file is read (default off)\n"
		"      --path auto|memory|ring  uring_b3sum: hash from the page cache (memory) or read through\n"
		"                               the ring (default auto: memory when the file is all in the page\n"
		"                               cache and --direct is not given)\n"
		"      --trace FILE             write a CSV row per consumer run: time_ns, in_flight, reaped,\n"
		"                               blocks_hashed, bytes_hashed (default off)\n"
		"      --positional             the article's form follows: FILE and seven numbers (default off;\n"
		"                               the article's variants take that form without it)\n"
		"  -h, --help                   show this help\n"
		"  -V, --version                show versions of this program, BLAKE3 and liburing\n\n"
		"Knobs a variant does not use (queue depth for the pread loop) are checked, then ignored.\n"
		"In the positional form BLOCK_KIB is in KiB and the flags are 0 or 1.\n"
		"Exit status: 0 if every FILE was hashed (or checked OK), 1 if any failed, 2 for a bad command line.\n",
		prog, prog, v->chooses_path ? "--positional " : "", opts->default_block_size >> (opts->default_block_size % (1u << 20) ? 10 : 20),
		opts->default_block_size % (1u << 20) ? "K" : "M",
		opts->default_queue_depth, opts->buffers_per_depth == 2 ? "twice " : "",
		v->direct_when_cold ? "off;\n                               but a file of a block or more that is not all in the page cache\n"
		"                               is read with O_DIRECT where SIZE and the filesystem allow" : "off",
		v->huge_pages ? "on" : "off");
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
	opts->block_size = v[0] << 10;
	opts->queue_depth = v[1];
	opts->direct = v[2];
	opts->process_in_inner_loop = v[3];
	opts->buffers = v[4];
	opts->buffers_given = true;
	opts->drain = v[5];
	opts->link = v[6];
	opts->files = &argv[1];
	opts->nr_files = 1;
	return -1;
}

/* getopt says '?' both for an unknown option and for a value given to a flag, as in --direct=1. */
static int unknown_option(const char *arg, int optopt_seen, const char *prog)
{
	const char *equals = strchr(arg, '=');

	if (!strncmp(arg, "--", 2) && equals) {
		for (const struct option *o = long_options; o->name; o++)
			if (strlen(o->name) == (size_t)(equals - arg - 2) && !strncmp(o->name, arg + 2, equals - arg - 2))
				return bad_usage(prog, "option '--%s' takes no value", o->name);
	}
	if (optopt_seen && strncmp(arg, "--", 2))
		return bad_usage(prog, "unknown option '-%c'", optopt_seen);
	return bad_usage(prog, "unknown option '%s'", arg);
}

static int parse_long_form(struct options *opts, int argc, char **argv, const char *prog, const struct variant *v)
{
	uint64_t threads;
	int c, ret;

	optind = 0;	/* glibc: start afresh, as this runs once for a defaults file and once for argv */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:q:n:l:dcvhV", long_options, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (!parse_size(optarg, &opts->block_size))
				return bad_usage(prog, "invalid --block-size '%s': expected bytes with an optional K, M or G suffix", optarg);
			break;
		case 'q':
			if (!parse_unsigned(optarg, &opts->queue_depth))
				return bad_usage(prog, "invalid --queue-depth '%s': expected a whole number", optarg);
			break;
		case 'n':
			if (!parse_unsigned(optarg, &opts->buffers))
				return bad_usage(prog, "invalid --buffers '%s': expected a whole number", optarg);
			opts->buffers_given = true;
			break;
		case 'd': opts->direct = true; break;
		case OPT_BUFFERED: opts->buffered = true; break;
		case 'i': opts->process_in_inner_loop = true; break;
		case 'D': opts->drain = true; break;
		case 'L': opts->link = true; break;
		case 'B': opts->fixed_buffers = true; break;
		case 'F': opts->fixed_file = true; break;
		case 'S': opts->sqpoll = true; break;
		case 'W': opts->submit_and_wait = true; break;
		case 'P': opts->iopoll = true; break;
		case 'H': opts->parallel_hash = true; break;
		case 'A': opts->fadvise_sequential = true; break;
		case OPT_DONTCACHE: opts->dontcache = true; break;
		case OPT_HUGE_PAGES: opts->huge_pages = true; break;
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
		case 'Q': opts->quiet = true; break;
		case 'v': opts->verbose = true; break;
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
		case 'h':
			usage(stdout, prog, opts, v);
			return 0;
		case 'V':
			printf("%s (ringsum %s) BLAKE3 %s liburing %s\n", prog, RINGSUM_VERSION,
			       blake3_version(), RINGSUM_LIBURING_VERSION);
			return 0;
		case ':':
			return bad_usage(prog, "option '%s' needs a value", argv[optind - 1]);
		default:
			return unknown_option(argv[optind - 1], optopt, prog);
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
	return -1;
}

static int validate(const struct options *opts, const struct variant *v, const char *prog)
{
	if (opts->block_size == 0)
		return bad_usage(prog, "the block size must be at least 1 byte");
	if (opts->block_size > MAX_BLOCK_SIZE)
		return bad_usage(prog, "the block size %zu is larger than the 1G maximum", opts->block_size);
	if (opts->direct && opts->block_size % DIRECT_ALIGN)
		return bad_usage(prog, "O_DIRECT needs a block size that is a multiple of %u bytes, got %zu",
				 DIRECT_ALIGN, opts->block_size);
	if (opts->queue_depth == 0)
		return bad_usage(prog, "the queue depth must be at least 1");
	if (opts->queue_depth > MAX_QUEUE_DEPTH)
		return bad_usage(prog, "the queue depth %u exceeds the kernel limit of %u (IORING_MAX_ENTRIES)",
				 opts->queue_depth, MAX_QUEUE_DEPTH);
	if (opts->buffers == 0)
		return bad_usage(prog, "the ring needs at least 1 buffer");
	if (opts->fixed_buffers && opts->buffers > MAX_FIXED_BUFFERS)
		return bad_usage(prog, "--fixed-buffers registers at most %u buffers, got %u",
				 MAX_FIXED_BUFFERS, opts->buffers);
	if (opts->direct && opts->buffered)
		return bad_usage(prog, "--direct and --buffered contradict each other");
	if (opts->iopoll && !opts->direct)
		return bad_usage(prog, "--iopoll needs --direct");
	if (opts->iopoll && v->uses_uring && !v->waits_on_completions)
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
	return -1;
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

/* Returns -1 to go on, or the exit status to leave with at once. */
int parse_options(struct options *opts, int argc, char **argv, const struct variant *v)
{
	int ret = -1;

	memset(opts, 0, sizeof(*opts));
	opts->block_size = opts->default_block_size = v->block_size ? v->block_size : DEFAULT_BLOCK_SIZE;
	opts->huge_pages = v->huge_pages;
	opts->queue_depth = opts->default_queue_depth = v->queue_depth ? v->queue_depth : DEFAULT_QUEUE_DEPTH;
	opts->buffers_per_depth = v->buffers_per_depth ? v->buffers_per_depth : 1;
	opts->format.length = BLAKE3_OUT_LEN;
	/* uring_b3sum takes its arguments as b3sum does: files named 1 2 0 0 1 0 0 are files. */
	if (argc == ARTICLE_ARGC + 1 && !strcmp(argv[1], "--positional") && is_article_form(argc - 1, argv + 1)) {
		ret = parse_article_form(opts, argv + 1, v->name);
	} else if (!v->chooses_path && is_article_form(argc, argv)) {
		ret = parse_article_form(opts, argv, v->name);
	} else {
		if (v->chooses_path)
			ret = parse_defaults_file(opts, v->name, v);
		if (ret < 0)
			ret = parse_long_form(opts, argc, argv, v->name, v);
	}
	if (ret >= 0)
		return ret;
	if (!opts->buffers_given)
		opts->buffers = opts->queue_depth * opts->buffers_per_depth;
	ret = validate(opts, v, v->name);
	if (ret >= 0)
		return ret;
	if (opts->nr_files == 0) {
		static char *standard_input[] = { "-", NULL };

		opts->files = standard_input;
		opts->nr_files = 1;
	}
	return -1;
}
