/* SPDX-License-Identifier: MIT */
/* --help, every option with its default, and --knobs-json, the knob table and the variant as the harness reads them. */
#include <string.h>

#include "options_impl.h"

#define HELP_COLUMN 31

/* 512K, 2M, 1000: the shortest exact form, as --block-size takes it. */
static void format_size(unsigned long long bytes, char *buf, size_t size)
{
	static const char suffix[] = "GMK";

	for (int i = 0; i < 3; i++) {
		unsigned shift = 30 - 10 * i;

		if (bytes && !(bytes & ((1ull << shift) - 1))) {
			snprintf(buf, size, "%llu%c", bytes >> shift, suffix[i]);
			return;
		}
	}
	snprintf(buf, size, "%llu", bytes);
}

static void describe_default(const struct knob *k, const struct knobs *defaults, const struct variant *v,
			     char *buf, size_t size)
{
	unsigned per_depth = buffers_per_depth(v);

	switch (k->type) {
	case KNOB_FLAG:
		snprintf(buf, size, "default %s", knob_get(defaults, k) ? "on" : "off");
		break;
	case KNOB_SIZE:
		snprintf(buf, size, "default ");
		format_size(knob_get(defaults, k), buf + 8, size - 8);
		break;
	case KNOB_BUFFERS:
		if (per_depth == 1)
			snprintf(buf, size, "default: the queue depth");
		else if (per_depth == 2)
			snprintf(buf, size, "default: twice the queue depth");
		else
			snprintf(buf, size, "default: %u times the queue depth", per_depth);
		break;
	default:
		snprintf(buf, size, "default %llu", knob_get(defaults, k));
	}
}

/* One knob's lines: "  -b, --block-size SIZE  help (default 512K)", more lines of help below. */
static void knob_usage(FILE *out, const struct knob *k, const struct knobs *defaults, const struct variant *v)
{
	char name[32], left[64], def[64];
	const char *help = k->help, *newline = strchr(help, '\n');
	int first = newline ? (int)(newline - help) : (int)strlen(help);

	knob_option_name(k, name, sizeof(name));
	if (k->short_name)
		snprintf(left, sizeof(left), "  -%c, --%s%s%s", k->short_name, name, k->arg ? " " : "", k->arg ? k->arg : "");
	else
		snprintf(left, sizeof(left), "      --%s%s%s", name, k->arg ? " " : "", k->arg ? k->arg : "");
	describe_default(k, defaults, v, def, sizeof(def));
	fprintf(out, "%-*s %.*s (%s)\n", HELP_COLUMN - 1, left, first, help, def);
	while (newline) {
		help = newline + 1;
		newline = strchr(help, '\n');
		first = newline ? (int)(newline - help) : (int)strlen(help);
		fprintf(out, "%*s%.*s\n", HELP_COLUMN, "", first, help);
	}
}

void usage(FILE *out, const char *prog, const struct variant *v)
{
	char size[32], tree[256] = "";
	struct knobs defaults;

	knob_defaults(&defaults, v, false);
	if (v->tree_direct_min) {
		format_size(v->tree_direct_min, size, sizeof(size));
		snprintf(tree, sizeof(tree), "%*s%s: --direct-min 0 (its default) is %s with it, --check or\n"
			 "%*smore than one FILE (small cold files)\n", HELP_COLUMN, "", v->name, size, HELP_COLUMN, "");
	}
	fprintf(out,
		"Usage: %s [OPTION]... [FILE]...\n"
		"   or: %s %sFILE BLOCK_KIB QUEUE_DEPTH USE_O_DIRECT PROCESS_IN_INNER_LOOP BUFFERS USE_DRAIN USE_LINK\n"
		"Print the BLAKE3 hash of each FILE, as b3sum 1.8.7 does, reading it through a ring of buffers.\n"
		"With no FILE, or when FILE is -, read standard input. Block devices are read through the ring,\n"
		"pipes and character devices as streams.\n\n"
		"b3sum's options:\n"
		"      --keyed                  keyed mode, the 32-byte key read from stdin (default off)\n"
		"      --derive-key CONTEXT     key derivation mode with this context (default off)\n"
		"  -l, --length LEN             output bytes, before hex encoding (default 32)\n"
		"      --seek SEEK              first output byte, before hex encoding (default 0)\n"
		"      --num-threads NUM        most threads hashing at once (default 0: one per core)\n"
		"      --no-mmap                never hash from a mapping of the page cache (default off)\n"
		"      --no-names               print hashes without names (default off)\n"
		"      --raw                    write the raw output bytes of one FILE, not hex (default off)\n"
		"      --tag                    BSD style: BLAKE3 (FILE) = HASH (default off)\n"
		"  -c, --check                  uring_b3sum: FILEs are b3sum checksum files; verify them (default off)\n"
		"      --quiet                  uring_b3sum --check: print only failures (default off)\n\n"
		"Ours:\n"
		"      --progress               bytes and files done, rate and time left, on stderr when it is a\n"
		"                               terminal, at most 4 times a second, cleared before each output\n"
		"                               line (default off)\n"
		"  -r, --recursive              hash every regular file under each FILE that is a directory, depth\n"
		"                               first, the paths in byte order (as find DIR -type f | LC_ALL=C sort);\n"
		"                               symlinks inside are neither followed nor hashed, FIFOs, sockets\n"
		"                               and devices skipped (default off: a directory is an error)\n"
		"      --files0-from FILE       hash the files FILE names, each name ended by a NUL (find -print0),\n"
		"                               in one run whatever their number; - reads them from stdin; no\n"
		"                               FILE operands besides (default off)\n"
		"%s\n"
		"The ring's options:\n",
		prog, prog, v->positional_flag ? "--positional " : "",
		tree);
	for (size_t i = 0; i < NR_KNOBS; i++)
		knob_usage(out, &knob_table[i], &defaults, v);
	fprintf(out,
		"  -v, --verbose                uring_b3sum: say how each file is read and which wisdom it\n"
		"                               used (default off)\n"
		"      --no-wisdom              uring_b3sum: leave the measured choices unread (default: read)\n"
		"      --wisdom-key             uring_b3sum: print the key of a record for the first FILE\n"
		"      --path auto|memory|ring  uring_b3sum: hash from the page cache (memory) or read through\n"
		"                               the ring (default auto: memory when 3/4 of the file or more is in\n"
		"                               the page cache and --direct is not given; partly there, each\n"
		"                               block from the cache if all there, else with O_DIRECT)\n"
		"      --trace FILE             write a CSV row per consumer run: time_ns, in_flight, reaped,\n"
		"                               blocks_hashed, bytes_hashed, peak_in_flight (default off)\n"
		"      --effective FILE         write how each file was really read, a JSON line each: path,\n"
		"                               block size, depth, buffers, O_DIRECT, huge pages (default off)\n"
		"      --effective-summary FILE\n"
		"                               the same, a line per distinct way at the end, with its files\n"
		"                               counted and bytes summed, for long lists (default off)\n"
		"      --positional             the article's form follows: FILE and seven numbers (default off;\n"
		"                               the article's variants take that form without it)\n"
		"      --knobs-json             describe the ring's options as JSON, for the harness\n"
		"  -h, --help                   show this help\n"
		"  -V, --version                show versions of this program, BLAKE3 and liburing\n\n"
		"Knobs a variant does not use (queue depth for the pread loop) are checked, then ignored.\n"
		"uring_b3sum's wisdom: choices `ringsum tune --install` measured, a record per CPU, SIMD\n"
		"degree, device and kind of work (a cold or cached file, a cold or cached tree), filling what no\n"
		"option gave (a tree's files are sampled to tell which it is); in $URING_B3SUM_WISDOM, else\n"
		"$XDG_CONFIG_HOME/ringsum/wisdom or ~/.config/ringsum/wisdom; `ringsum wisdom show` lists\n"
		"them, `ringsum wisdom forget` drops them.\n"
		"In the positional form BLOCK_KIB is in KiB and the flags are 0 or 1.\n"
		"Exit status: 0 if every FILE was hashed (or checked OK), 1 if any failed, 2 for a bad command line.\n");
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void json_default(FILE *out, const struct knob *k, const struct knobs *defaults, unsigned per_depth)
{
	if (k->type == KNOB_FLAG)
		fputs(knob_get(defaults, k) ? "true" : "false", out);
	else if (k->type == KNOB_BUFFERS && per_depth == 1)
		fputs("\"queue_depth\"", out);
	else if (k->type == KNOB_BUFFERS)
		fprintf(out, "\"%u*queue_depth\"", per_depth);
	else
		fprintf(out, "%llu", knob_get(defaults, k));
}

/* What the harness asks of a variant, beyond its knobs (struct variant's first fields). */
static void variant_info_json(FILE *out, const struct variant *v)
{
	static const char *const articles[] = { "null", "\"singlethread\"", "\"multithread\"" };

	fprintf(out, "{\"summary\": ");
	json_string(out, v->summary);
	fprintf(out, ", \"article\": %s, \"positional_flag\": %s, \"parallel\": %s, \"counted\": %s, "
		"\"io_uring\": %s, \"chooses_path\": %s, \"falls_back\": %s, \"grows_depth\": %s, \"defaults_file\": ",
		articles[v->article], v->positional_flag ? "true" : "false", v->parallel ? "true" : "false",
		v->counted ? "true" : "false", v->uses_uring ? "true" : "false", v->chooses_path ? "true" : "false",
		v->falls_back ? "true" : "false", v->adapts_window ? "true" : "false");
	if (v->defaults_file)
		json_string(out, v->defaults_file);
	else
		fputs("null", out);
	fputc('}', out);
}

/*
 * --knobs-json: the table as the harness reads it. "default" is the article's
 * (the harness's), "variant_default" this program's own; "used" says whether
 * this variant acts on the knob ("needs" says what it takes); "wisdom" the kinds
 * of work whose records may choose it (wisdom.c). "variant_info"
 * is the variant's own description.
 */
void knobs_json(FILE *out, const struct variant *v)
{
	static const char *const types[] = { "size", "count", "buffers", "flag" };
	static const char *const needs[] = { "all", "io_uring", "a loop that waits on completions",
					      "hashing from the page cache" };
	struct knobs article, own;
	char name[32];

	knob_defaults(&article, v, true);
	knob_defaults(&own, v, false);
	fprintf(out, "{\"variant\": ");
	json_string(out, v->name);
	fprintf(out, ", \"variant_info\": ");
	variant_info_json(out, v);
	fprintf(out, ", \"knobs\": [");
	for (size_t i = 0; i < NR_KNOBS; i++) {
		const struct knob *k = &knob_table[i];

		knob_option_name(k, name, sizeof(name));
		fprintf(out, "%s\n  {\"name\": \"%s\", \"option\": \"--%s\", \"short\": ", i ? "," : "", k->name, name);
		if (k->short_name)
			fprintf(out, "\"-%c\"", k->short_name);
		else
			fputs("null", out);
		fprintf(out, ", \"type\": \"%s\", \"default\": ", types[k->type]);
		json_default(out, k, &article, 1);
		fprintf(out, ", \"variant_default\": ");
		json_default(out, k, &own, buffers_per_depth(v));
		fprintf(out, ", \"min\": %llu, \"max\": %llu, \"label\": \"%s\", \"positional\": %d, "
			"\"needs\": \"%s\", \"used\": %s, \"wisdom\": [", k->min, k->max, k->label, k->positional,
			needs[k->needs], knob_used(k, v) ? "true" : "false");
		for (enum wisdom_work w = 0, listed = 0; w < NR_WORKS; w++)
			if (wisdom_works(k) >> w & 1)
				fprintf(out, "%s\"%s\"", listed++ ? ", " : "", wisdom_work_name(w));
		fprintf(out, "], \"help\": ");
		json_string(out, k->help);
		fputc('}', out);
	}
	fprintf(out, "\n]}\n");
}
