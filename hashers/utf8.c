/* SPDX-License-Identifier: MIT */
/* UTF-8 as b3sum reads it: the paths it prints (output.c) and the checksum lines it takes (checksum_file.c). */
#include "ringsum.h"

/*
 * Length of the valid UTF-8 sequence at s, or 0 if it is invalid; *bad is set
 * to how many bytes one U+FFFD replaces, as Rust's from_utf8_lossy does.
 */
size_t utf8_sequence(const unsigned char *s, size_t left, size_t *bad)
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

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, bad;

	for (; len; p += n, len -= n)
		if (!(n = utf8_sequence(p, len, &bad)))
			return false;
	return true;
}
