/* SPDX-License-Identifier: MIT */
/*
 * The inputs, one at a time: the FILEs of the command line, or with --check
 * the lines of b3sum checksum files, read as the producer needs them so that
 * memory does not grow with the number of lines.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int grow_text(struct input *in, size_t size)
{
	char *grown;

	if (size <= in->text_size)
		return 0;
	grown = realloc(in->text, size);
	if (!grown)
		return -ENOMEM;
	in->text = grown;
	in->text_size = size;
	return 0;
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
static int next_check_line(struct source *s, struct input *in)
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

/* Fill in the next input, keeping the slot's text buffer. Returns 1, or 0 when there are no more. */
int source_next(struct source *s, struct input *in)
{
	char *text = in->text;
	size_t text_size = in->text_size;

	memset(in, 0, sizeof(*in));
	in->text = text;
	in->text_size = text_size;
	in->fd = -1;
	if (s->fatal)
		return 0;
	if (s->check)
		return next_check_line(s, in) > 0;
	if (s->next_file == s->nr_files)
		return 0;
	in->path = s->files[s->next_file++];
	return 1;
}

void source_close(struct source *s)
{
	if (s->checkfile && s->checkfile != stdin)
		fclose(s->checkfile);
	s->checkfile = NULL;
	free(s->line);
	s->line = NULL;
}

void input_free(struct input *in)
{
	if (in->fd >= 0 && !in->borrowed_fd)
		close(in->fd);
	in->fd = -1;
	free(in->text);
	in->text = NULL;
}
