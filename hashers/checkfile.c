/* SPDX-License-Identifier: MIT */
/* The list of files to hash, and reading it from b3sum checksum files for --check. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringsum.h"

struct input *input_list_add(struct input_list *list, const char *path)
{
	struct input *in;

	if (list->nr_inputs == list->allocated) {
		unsigned allocated = list->allocated ? 2 * list->allocated : 16;
		struct input *grown = realloc(list->inputs, allocated * sizeof(*grown));

		if (!grown)
			return NULL;
		list->inputs = grown;
		list->allocated = allocated;
	}
	in = &list->inputs[list->nr_inputs++];
	memset(in, 0, sizeof(*in));
	in->path = path;
	in->fd = -1;
	return in;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Undo b3sum's escaping in place: \\ and \n are the only escapes it writes. */
static bool unescape(char *path)
{
	char *out = path;

	for (char *s = path; *s; s++) {
		if (*s != '\\') {
			*out++ = *s;
			continue;
		}
		s++;
		if (*s == '\\')
			*out++ = '\\';
		else if (*s == 'n')
			*out++ = '\n';
		else
			return false;
	}
	*out = '\0';
	return true;
}

/* "<64 hex>  <path>", or with a leading \ when the path is escaped. */
static bool parse_line(char *line, uint8_t hash[BLAKE3_OUT_LEN], char **path)
{
	bool escaped = line[0] == '\\';
	char *hex = line + escaped;

	for (int i = 0; i < BLAKE3_OUT_LEN; i++) {
		int hi = hex_value(hex[2 * i]), lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		hash[i] = hi << 4 | lo;
	}
	if (hex[64] != ' ' || hex[65] != ' ' || !hex[66])
		return false;
	*path = hex + 66;
	return !escaped || unescape(*path);
}

int read_checkfile(struct input_list *list, const char *checkfile, const char *prog)
{
	FILE *f = fopen(checkfile, "re");
	char *line = NULL, *path, *owned, **grown;
	size_t capacity = 0;
	ssize_t length;
	unsigned line_number = 0;
	uint8_t hash[BLAKE3_OUT_LEN];
	struct input *in;
	int ret = 0;

	if (!f) {
		print_error(prog, checkfile, -errno);
		return -errno;
	}
	while ((length = getline(&line, &capacity, f)) > 0) {
		line_number++;
		if (line[length - 1] == '\n')
			line[--length] = '\0';
		if (!parse_line(line, hash, &path)) {
			fprintf(stderr, "%s: %s:%u: invalid check line format\n", prog, checkfile, line_number);
			ret = -EINVAL;
			break;
		}
		owned = strdup(path);
		grown = owned ? realloc(list->owned_paths, (list->nr_owned + 1) * sizeof(*grown)) : NULL;
		if (grown)
			list->owned_paths = grown;
		in = grown ? input_list_add(list, owned) : NULL;
		if (!in) {
			free(owned);
			ret = -ENOMEM;
			print_error(prog, checkfile, ret);
			break;
		}
		list->owned_paths[list->nr_owned++] = owned;
		in->checking = true;
		memcpy(in->expected, hash, BLAKE3_OUT_LEN);
	}
	free(line);
	fclose(f);
	return ret;
}

void input_list_free(struct input_list *list)
{
	for (unsigned i = 0; i < list->nr_inputs; i++)
		if (list->inputs[i].fd >= 0)
			close(list->inputs[i].fd);
	for (unsigned i = 0; i < list->nr_owned; i++)
		free(list->owned_paths[i]);
	free(list->owned_paths);
	free(list->inputs);
}
