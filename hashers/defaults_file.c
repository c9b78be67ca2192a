/* SPDX-License-Identifier: MIT */
/* uring_b3sum's defaults file: long options, one per line, read before the command line. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "options_impl.h"

/*
 * uring_b3sum's own defaults, such as `ringsum tune --install` writes: long
 * options, one per line, # comments; the command line comes after them.
 * $URING_B3SUM_OPTIONS names the file, else $XDG_CONFIG_HOME/ringsum/ or
 * ~/.config/ringsum/ holds the variant's .defaults_file, used if it exists and can be read.
 */
int parse_defaults_file(struct options *opts, const char *prog, const struct variant *v)
{
	const char *path = getenv("URING_B3SUM_OPTIONS"), *base = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char default_path[PATH_MAX], where[PATH_MAX + 64], *words[64], *line, *word, *lines, *fields;
	int nr_words = 1, ret;
	size_t used;
	FILE *f;

	if (!path) {
		snprintf(default_path, sizeof(default_path), "%s%s/ringsum/%s",
			 base ? base : home ? home : "", base ? "" : "/.config", v->defaults_file);
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
