/* SPDX-License-Identifier: MIT */
/*
 * --check: the lines of b3sum checksum files, one at a time as the producer
 * needs them, each parsed into an input to verify, as b3sum parses them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringsum.h"

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* b3sum's unescape: \n, \r and \\ only, a lone trailing backslash is an error too. */
static int unescape(char *out, const char *s, size_t len, size_t *out_len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\\') {
			out[n++] = s[i];
			continue;
		}
		if (++i == len)
			return -ERR_ESCAPE;
		if (s[i] == 'n')
			out[n++] = '\n';
		else if (s[i] == 'r')
			out[n++] = '\r';
		else if (s[i] == '\\')
			out[n++] = '\\';
		else
			return -ERR_ESCAPE;
	}
	*out_len = n;
	return 0;
}

static const char *find_last(const char *s, size_t len, const char *needle, size_t needle_len)
{
	for (size_t i = len; i >= needle_len; i--)
		if (!memcmp(s + i - needle_len, needle, needle_len))
			return s + i - needle_len;
	return NULL;
}

/*
 * b3sum's parse_check_line, check for check: "<hash>  <file>" split at the
 * first two spaces, else "BLAKE3 (<file>) = <hash>" split at the last ") = ";
 * a leading \ says the file is escaped. The name is shown as written.
 */
static int parse_check_line(struct input *in, char *line, size_t len)
{
	const char *hash, *file, *split;
	size_t hash_len, file_len, path_len;
	bool escaped;
	int ret;

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (!len)
		return -ERR_EMPTY_LINE;
	escaped = line[0] == '\\';
	line += escaped;
	len -= escaped;
	if ((split = memmem(line, len, "  ", 2))) {
		hash = line;
		hash_len = split - line;
		file = split + 2;
		file_len = line + len - file;
	} else if (len >= 8 && !memcmp(line, "BLAKE3 (", 8) && (split = find_last(line + 8, len - 8, ") = ", 4))) {
		file = line + 8;
		file_len = split - file;
		hash = split + 4;
		hash_len = line + len - hash;
	} else {
		return -ERR_LINE_FORMAT;
	}
	if (hash_len != 2 * BLAKE3_OUT_LEN)
		return -ERR_HASH_LENGTH;
	for (int i = 0; i < BLAKE3_OUT_LEN; i++) {
		int hi = hex_value(hash[2 * i]), lo = hex_value(hash[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -ERR_HEX;
		in->expected[i] = hi << 4 | lo;
	}
	/* path, then the shown name: at most the line twice, plus \ and two NULs */
	if ((ret = grow_text(in, 2 * file_len + 3)) < 0)
		return ret;
	if (!escaped)
		memcpy(in->text, file, path_len = file_len);
	else if ((ret = unescape(in->text, file, file_len, &path_len)) < 0)
		return ret;
	if (!path_len)
		return -ERR_EMPTY_PATH;
	if (memchr(in->text, '\0', path_len))
		return -ERR_NUL_IN_PATH;
	if (memmem(in->text, path_len, "\xef\xbf\xbd", 3))
		return -ERR_REPLACEMENT_IN_PATH;
	in->text[path_len] = '\0';
	in->path = in->text;
	in->shown = in->text + path_len + 1;
	sprintf(in->text + path_len + 1, "%s%.*s", escaped ? "\\" : "", (int)file_len, file);
	return 0;
}

/* The next line of the checksum files: 1 with a line (maybe a bad one, in->error), 0 at the end. */
int next_check_line(struct source *s, struct input *in)
{
	ssize_t len;

	for (;;) {
		if (!s->checkfile) {
			const char *name;

			if (s->next_file == s->nr_files)
				return 0;
			name = s->files[s->next_file++];
			s->checkfile = strcmp(name, "-") ? fopen(name, "re") : stdin;
			if (!s->checkfile)
				return s->fatal = -errno;
		}
		errno = 0;
		len = getline(&s->line, &s->capacity, s->checkfile);
		if (len > 0)
			break;
		if (errno && errno != ENOMEM)
			return s->fatal = -errno;
		if (errno)
			return s->fatal = -ENOMEM;
		if (s->checkfile != stdin)
			fclose(s->checkfile);
		s->checkfile = NULL;
	}
	/* b3sum reads lines into a String: a checksum file that is not UTF-8 ends the run. */
	if (!utf8_valid(s->line, len))
		return s->fatal = -ERR_NOT_UTF8;
	in->checking = true;
	in->path = in->shown = "";
	in->error = parse_check_line(in, s->line, len);
	return 1;
}
