/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the hashers' command line parser, parse_options(), on arbitrary argv words. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringsum.h"

#define MAX_WORDS 64

/* grammar_flags.c prints --version and wisdom.c keys records by the SIMD degree; the real ones live in libblake3. */
const char *blake3_version(void) { return "fuzz"; }
size_t blake3_simd_degree(void) { return 1; }

/* Every variant as it declares itself in hashers/variants/ (the Makefile writes the rows from those files). */
#define VARIANT_ROW(program, stream, ...) { .name = program, __VA_ARGS__ },
static const struct variant variants[] = {
#include "variant_table.h"
};
#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

/* What parse_options() promises when it returns -1 (go on and hash). */
static void check_accepted(const struct options *o, const struct variant *v, char **argv, int argc)
{
	bool standard_input = o->nr_files == 1 && !strcmp(o->files[0], "-") && (o->files < argv || o->files >= argv + argc);

	/* --files0-from: its list names every file, no FILE besides, and neither --check nor --raw */
	if (!o->files0_from != !o->list || (o->list && (o->nr_files || o->check || o->format.raw)))
		__builtin_trap();
	/* no FILE: stdin, as b3sum */
	if (!o->list && (o->nr_files < 1 || (!standard_input && (o->files < argv || o->files + o->nr_files > argv + argc))))
		__builtin_trap();
	if (o->check && (o->keyed || o->derive_key || o->length_given || o->format.raw || o->format.tag ||
			 o->format.no_names))
		__builtin_trap();
	if ((o->keyed && (o->derive_key || standard_input)) || (o->quiet && !o->check))
		__builtin_trap();
	for (int i = 0; i < o->nr_files; i++)
		if (!o->files[i])
			__builtin_trap();
	if (o->knobs.block_size < 1 || o->knobs.block_size > MAX_BLOCK_SIZE)
		__builtin_trap();
	if (o->knobs.direct && o->knobs.block_size % DIRECT_ALIGN)
		__builtin_trap();
	if (o->knobs.queue_depth < 1 || o->knobs.queue_depth > MAX_QUEUE_DEPTH || o->knobs.buffers < 1)
		__builtin_trap();
	if (o->knobs.fixed_buffers && o->knobs.buffers > MAX_FIXED_BUFFERS)
		__builtin_trap();
	if (o->knobs.iopoll && (!o->knobs.direct || (v->uses_uring && !v->waits_on_completions)))
		__builtin_trap();
	if ((o->check || o->quiet || o->verbose || o->path_given) && !v->chooses_path)
		__builtin_trap();
}

/* A list named "-" is read from stdin when the wisdom looks at it: nothing there, never a wait. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return freopen("/dev/null", "r", stdin) ? 0 : 1;
}

/*
 * Input: one byte choosing the variant, then argv words separated by NUL bytes
 * (argv[0] is the variant's name), so that words may hold spaces and newlines.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_WORDS + 2], *text;
	const struct variant *v;
	struct options opts;
	int argc = 0, ret;

	if (size < 1)
		return 0;
	v = &variants[data[0] % NR_VARIANTS];
	text = malloc(size);		/* the words plus a final NUL, exactly sized for ASan */
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	argv[argc++] = (char *)v->name;
	for (char *word = text; word < text + size && argc <= MAX_WORDS; word += strlen(word) + 1)
		argv[argc++] = word;
	if (size == 1)
		argc = 1;
	argv[argc] = NULL;

	optind = 0;			/* getopt_long keeps state between calls: start afresh */
	ret = parse_options(&opts, argc, argv, v);
	if (ret == -1)
		check_accepted(&opts, v, argv, argc);
	else if ((ret != 0 && ret != 2) || opts.list)
		__builtin_trap();
	name_list_close(opts.list);
	free(text);
	return 0;
}
