/* SPDX-License-Identifier: MIT */
/* Output exactly as the official b3sum prints it, escaping included. */
#include <string.h>

#include "ringsum.h"

static const char replacement_character[] = "\xef\xbf\xbd";

/*
 * Length of the valid UTF-8 sequence at s, or 0 if it is invalid; *bad is set
 * to how many bytes one U+FFFD replaces, as Rust's from_utf8_lossy does.
 */
static size_t utf8_sequence(const unsigned char *s, size_t left, size_t *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t width;

	*bad = 1;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		width = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		width = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		width = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	for (size_t i = 1; i < width; i++, lo = 0x80, hi = 0xbf) {
		if (i >= left || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
	}
	return width;
}

/* b3sum prints the path as lossy UTF-8 with \ and newline escaped, and then marks the line with \. */
static void print_path(FILE *out, const char *path)
{
	const unsigned char *s = (const unsigned char *)path;
	size_t left = strlen(path), n, bad;

	while (left) {
		n = utf8_sequence(s, left, &bad);
		if (!n) {
			fputs(replacement_character, out);
			n = bad;
		} else if (*s == '\\') {
			fputs("\\\\", out);
		} else if (*s == '\n') {
			fputs("\\n", out);
		} else {
			fwrite(s, 1, n, out);
		}
		s += n;
		left -= n;
	}
}

/* b3sum marks a line whose path it escaped with a leading backslash. */
static void mark_escaped(const char *path)
{
	if (strpbrk(path, "\\\n"))
		putchar('\\');
}

void print_hash(const char *path, const uint8_t hash[BLAKE3_OUT_LEN])
{
	mark_escaped(path);
	for (int i = 0; i < BLAKE3_OUT_LEN; i++)
		printf("%02x", hash[i]);
	fputs("  ", stdout);
	print_path(stdout, path);
	putchar('\n');
}

const char *ringsum_strerror(int err)
{
	switch (-err) {
	case ERR_FILE_CHANGED:		return "file changed while it was being read";
	case ERR_FILE_SHRANK:		return "file shrank while it was being read";
	case ERR_FILE_LONGER:		return "file has data past its size: it grew while being read, or its size is not real (as in /proc)";
	case ERR_NOT_REGULAR:		return "not a regular file";
	case ERR_DIRECT_UNSUPPORTED:	return "O_DIRECT refused: the filesystem does not support it (try without --direct)";
	case ERR_NOT_POLLABLE:		return "IOPOLL needs a block device with poll queues (its queue/io_poll is 0 or absent)";
	case ERR_STALLED:		return "internal error: waiting for a completion with nothing in flight";
	default:			return strerror(-err);
	}
}

void print_error(const char *prog, const char *path, int err)
{
	fprintf(stderr, "%s: ", prog);
	print_path(stderr, path);
	fprintf(stderr, ": %s\n", ringsum_strerror(err));
}

/* --check lines, as b3sum prints them: "path: OK", "path: FAILED", "path: FAILED (reason (os error N))". */
void print_check(const char *path, const char *verdict)
{
	mark_escaped(path);
	print_path(stdout, path);
	printf(": %s\n", verdict);
}

void print_check_failure(const char *path, int err)
{
	mark_escaped(path);
	print_path(stdout, path);
	if (-err < ERR_FILE_CHANGED)
		printf(": FAILED (%s (os error %d))\n", strerror(-err), -err);
	else
		printf(": FAILED (%s)\n", ringsum_strerror(err));
}
