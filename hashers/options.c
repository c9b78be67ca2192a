/* SPDX-License-Identifier: MIT */
/*
 * Command line of every hasher: parse_options(), the option unit's way in. It
 * picks the grammar (grammar_*.c), reads the defaults file and the wisdom
 * before and after it, and checks the result; the rest of the unit never calls
 * back here.
 */
#include <string.h>
#include <unistd.h>

#include "options_impl.h"

/* --files0-from names every file: as GNU du and wc, no FILE besides, and stdin holds either the list or the key. */
static int check_list_rules(const struct options *opts, const char *prog)
{
	if (!opts->files0_from)
		return -1;
	if (opts->nr_files)
		return bad_usage(prog, "extra operand '%s': file operands cannot be combined with --files0-from",
				 opts->files[0]);
	if (opts->check)
		return bad_usage(prog, "the argument '--check' cannot be used with '--files0-from': a checksum file names its files");
	if (opts->format.raw)
		return bad_usage(prog, "the argument '--raw' cannot be used with '--files0-from': --raw writes one file's bytes");
	if (opts->keyed && !strcmp(opts->files0_from, "-"))
		return bad_usage(prog, "--keyed reads the key from stdin: the list of names cannot come from it too");
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
	if (opts->keyed && opts->nr_files == 0 && !opts->files0_from)
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
	if (opts->knobs.stage_copy + opts->knobs.read_once + opts->knobs.in_place + opts->knobs.prefetch > 1)
		return bad_usage(prog, "--stage-copy, --read-once, --in-place and --prefetch contradict each other");
	if (opts->knobs.iopoll && !opts->knobs.direct)
		return bad_usage(prog, "--iopoll needs --direct");
	if (opts->knobs.iopoll && v->uses_uring && !v->waits_on_completions)
		return bad_usage(prog, "--iopoll needs a loop that waits on completions; use the single-threaded variant");
	if (!v->chooses_path && (opts->check || opts->quiet || opts->verbose || opts->path_given))
		return bad_usage(prog, "--check, --quiet, --verbose and --path belong to uring_b3sum");
	if (!v->defaults_file && (opts->no_wisdom || opts->wisdom_key))
		return bad_usage(prog, "--no-wisdom and --wisdom-key belong to uring_b3sum");
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

/*
 * --files0-from's list, opened before the wisdom looks at its first files. A
 * list that cannot be opened ends the run once the hashing asks it for a name
 * (main.c names it), as one that cannot be read.
 */
static int open_name_list(struct options *opts)
{
	if (check_list_rules(opts, opts->prog) >= 0)
		return 2;
	if (name_list_open(&opts->list, opts->files0_from) < 0)
		return bad_usage(opts->prog, "--files0-from %s: out of memory", opts->files0_from);
	return -1;
}

/* The run ends before any hashing, with this exit status: the list goes too. */
static int ending(struct options *opts, int status)
{
	name_list_close(opts->list);
	opts->list = NULL;
	return status;
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
	} else if (!v->positional_flag && is_article_form(argc, argv)) {
		ret = parse_article_form(opts, argv, opts->prog);
	} else {
		if (v->defaults_file)
			ret = parse_defaults_file(opts, opts->prog, v);
		if (ret < 0)
			ret = parse_long_form(opts, argc, argv, opts->prog, v);
	}
	if (ret < 0 && opts->files0_from)
		ret = open_name_list(opts);
	if (ret < 0 && v->defaults_file)
		ret = apply_wisdom(opts, v);
	if (ret >= 0)
		return ending(opts, ret);
	/* many files: a list (xargs, --files0-from) and a checksum file are a tree's files too */
	if (many_files(opts) && v->tree_direct_min && !opts->knobs.direct_min)
		opts->knobs.direct_min = v->tree_direct_min;
	/* uring_b3sum's depth, buffers and window, none given nor recorded: twice the buffers, half kept for a deeper queue */
	opts->depth_grows = v->adapts_window && !knob_given(opts, offsetof(struct knobs, queue_depth)) &&
			    !knob_given(opts, offsetof(struct knobs, buffers)) && !opts->knobs.window;
	if (!knob_given(opts, offsetof(struct knobs, buffers)))
		opts->knobs.buffers = opts->knobs.queue_depth * buffers_per_depth(v) * (opts->depth_grows ? 2 : 1);
	ret = validate(opts, v, opts->prog);
	if (ret >= 0)
		return ending(opts, ret);
	if (opts->nr_files == 0 && !opts->list) {
		static char *standard_input[] = { "-", NULL };

		opts->files = standard_input;
		opts->nr_files = 1;
	}
	return -1;
}
