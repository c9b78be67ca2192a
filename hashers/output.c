/* SPDX-License-Identifier: MIT */
/* Output exactly as the official b3sum prints it, escaping included. */
#include <string.h>

#include "ringsum.h"

static const char replacement_character[] = "\xef\xbf\xbd";

/* The path as b3sum shows it: lossy UTF-8, and in hash lines \, newline and CR escaped. */
static void print_path(FILE *out, const char *path, bool escape)
{
	const unsigned char *s = (const unsigned char *)path, *plain = s;
	size_t left = strlen(path), n, bad;

	/* the bytes that stand as they are go out a run at a time: a path is mostly them */
	for (; left; s += n, left -= n) {
		const char *instead = NULL;

		n = utf8_sequence(s, left, &bad);
		if (!n) {
			instead = replacement_character;
			n = bad;
		} else if (escape && *s == '\\') {
			instead = "\\\\";
		} else if (escape && *s == '\n') {
			instead = "\\n";
		} else if (escape && *s == '\r') {
			instead = "\\r";
		}
		if (!instead)
			continue;
		fwrite(plain, 1, s - plain, out);
		fputs(instead, out);
		plain = s + n;
	}
	fwrite(plain, 1, s - plain, out);
}

/* --length bytes of output from --seek on, as hex or raw, a block at a time. */
static void print_output(const struct output_format *f, blake3_hasher *hasher)
{
	uint8_t block[4096];
	uint64_t position = f->seek, left = f->length;

	while (left) {
		size_t n = left < sizeof(block) ? left : sizeof(block);

		blake3_hasher_finalize_seek(hasher, position, block, n);
		if (f->raw) {
			fwrite(block, 1, n, stdout);
		} else {
			static const char digits[] = "0123456789abcdef";
			char hex[2 * sizeof(block)];

			for (size_t i = 0; i < n; i++) {
				hex[2 * i] = digits[block[i] >> 4];
				hex[2 * i + 1] = digits[block[i] & 15];
			}
			fwrite(hex, 1, 2 * n, stdout);
		}
		position += n;
		left -= n;
	}
}

/* b3sum's line: a leading \ when the name was escaped, then HASH  NAME or BLAKE3 (NAME) = HASH. */
void print_hash(const struct output_format *f, const char *path, blake3_hasher *hasher)
{
	if (f->raw || f->no_names) {
		print_output(f, hasher);
		if (!f->raw)
			putchar('\n');
		return;
	}
	if (strpbrk(path, "\\\n\r"))
		putchar('\\');
	if (f->tag) {
		fputs("BLAKE3 (", stdout);
		print_path(stdout, path, true);
		fputs(") = ", stdout);
		print_output(f, hasher);
	} else {
		print_output(f, hasher);
		fputs("  ", stdout);
		print_path(stdout, path, true);
	}
	putchar('\n');
}

const char *ringsum_strerror(int err)
{
	switch (-err) {
	case ERR_FILE_CHANGED:		return "file changed while it was being read";
	case ERR_FILE_SHRANK:		return "file shrank while it was being read";
	case ERR_FILE_LONGER:		return "file has data past its size: it grew while being read, or its size is not real (as in /proc)";
	case ERR_NOT_REGULAR:		return "not a regular file, block or character device, or FIFO";
	case ERR_DIRECT_UNSUPPORTED:	return "O_DIRECT refused: the filesystem does not support it (try without --direct)";
	case ERR_DONTCACHE_UNSUPPORTED:	return "RWF_DONTCACHE refused: uncached reads need Linux 6.14+ and a filesystem that supports them (try without --dontcache)";
	case ERR_NOT_POLLABLE:		return "IOPOLL needs a block device with poll queues (its queue/io_poll is 0 or absent)";
	case ERR_EMPTY_NAME:		return "a zero-length file name in the list";
	case ERR_STDIN_IS_LIST:		return "standard input holds the list of names: - cannot be a file there too";
	case ERR_STALLED:		return "internal error: waiting for a completion with nothing in flight";
	/* b3sum's own words for these */
	case ERR_KEYED_STDIN:		return "Cannot open `-` in keyed mode";
	case ERR_EMPTY_LINE:		return "Empty line";
	case ERR_LINE_FORMAT:		return "Invalid check line format";
	case ERR_HASH_LENGTH:		return "Invalid hash length";
	case ERR_HEX:			return "Invalid hex";
	case ERR_ESCAPE:		return "Invalid backslash escape";
	case ERR_EMPTY_PATH:		return "empty file path";
	case ERR_NUL_IN_PATH:		return "Null character in path";
	case ERR_REPLACEMENT_IN_PATH:	return "Unicode replacement character in path";
	case ERR_NOT_UTF8:		return "stream did not contain valid UTF-8";
	default:			return strerror(-err);
	}
}

/* An errno as Rust's io::Error shows it, "No such file or directory (os error 2)"; ours as they are. */
const char *describe_error(int err, char *buf, size_t size)
{
	if (-err >= ERR_FILE_CHANGED)
		return ringsum_strerror(err);
	snprintf(buf, size, "%s (os error %d)", strerror(-err), -err);
	return buf;
}

/* b3sum: "b3sum: NAME: ERROR", the name lossy but not escaped. */
void print_error(const char *prog, const char *path, int err)
{
	char buf[128];

	fflush(stdout);	/* b3sum's stdout is line-buffered: keep the order of both, as in 2>&1 */
	fprintf(stderr, "%s: ", prog);
	print_path(stderr, path, false);
	fprintf(stderr, ": %s\n", describe_error(err, buf, sizeof(buf)));
}

/* --check lines show the name as the checksum file wrote it: "NAME: OK", "NAME: FAILED (ERROR)". */
void print_line_error(const char *prog, int err)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", prog, ringsum_strerror(err));
}

void print_check(const char *shown, const char *verdict)
{
	printf("%s: %s\n", shown, verdict);
}

void print_check_failure(const char *shown, int err)
{
	char buf[128];

	printf("%s: FAILED (%s)\n", shown, describe_error(err, buf, sizeof(buf)));
}
