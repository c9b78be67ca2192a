/* SPDX-License-Identifier: MIT */
/* The article's command line: FILE and seven numbers, no options (its variants', or after --positional). */
#include "options_impl.h"

/* FILE and seven numbers, no options: the article's command lines run as they were. */
bool is_article_form(int argc, char **argv)
{
	unsigned long long ignored;

	if (argc != ARTICLE_ARGC || argv[1][0] == '-')
		return false;
	for (int i = 2; i < argc; i++)
		if (!parse_count(argv[i], &ignored))
			return false;
	return true;
}

int parse_article_form(struct options *opts, char **argv, const char *prog)
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
