/* SPDX-License-Identifier: MIT */
/*
 * uring_b3sum's wisdom: choices measured on this machine, kept as FFTW keeps
 * wisdom for its plans. `ringsum tune --install` writes one record per kind of
 * work it measured, keyed by what the choice depends on, one line each:
 *
 *   cpu=25/1/1 simd=8 device=vda work=cold-file measured=2026-11-27T12:00:00Z options=--block-size 4M
 *
 * cpu is /proc/cpuinfo's family/model/stepping, simd the SIMD degree BLAKE3
 * runs at, device the block device under the first file, work a cold file, a
 * cached file, a cold tree or a cached tree (many files: the ring's knobs serve
 * a cached tree's small files too, so a tree's cache state is sampled before
 * its record is chosen). A record fills only the knobs its kind
 * of work decides (wisdom_works()), never one the command line or the options
 * file gave, and never a flag that forces the path for every kind (--direct,
 * --buffered): a record measured on a cold file cannot send a cached one to
 * the disk. $URING_B3SUM_WISDOM names the file, else it is
 * $XDG_CONFIG_HOME/ringsum/wisdom or ~/.config/ringsum/wisdom; --no-wisdom
 * and URING_B3SUM_WISDOM=/dev/null (as every sweep and test sets) turn it off.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "blake3_impl.h"
#include "input.h"
#include "options_impl.h"

#define MAX_RECORD_WORDS 64
/* A tree's first regular files, at most this many, say whether it is cached, by majority. */
#define TREE_SAMPLE 8
#define TREE_LOOK_MAX (8 * TREE_SAMPLE)

/* /proc/cpuinfo's first CPU, "family/model/stepping" (arm64: implementer/part/revision), as ringsum's fingerprint. */
static void cpu_signature(char *buf, size_t size)
{
	static const char *const keys[2][3] = { { "cpu family", "model", "stepping" },
						{ "CPU implementer", "CPU part", "CPU revision" } };
	char values[2][3][24] = { 0 }, line[512];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, size, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && line[0] != '\n') {
		char *colon = strchr(line, ':'), *key_end = colon, *value;

		if (!colon)
			continue;
		while (key_end > line && (key_end[-1] == ' ' || key_end[-1] == '\t'))
			key_end--;
		*key_end = '\0';
		value = colon + 1 + strspn(colon + 1, " \t");
		value[strcspn(value, "\n")] = '\0';
		for (int set = 0; set < 2; set++)
			for (int i = 0; i < 3; i++)
				if (!strcmp(line, keys[set][i]) && !values[set][i][0])
					snprintf(values[set][i], sizeof(values[set][i]), "%s", value);
	}
	fclose(f);
	for (int set = 0; set < 2; set++)
		if (values[set][0][0] && values[set][1][0] && values[set][2][0]) {
			snprintf(buf, size, "%s/%s/%s", values[set][0], values[set][1], values[set][2]);
			return;
		}
}

/* The block device under path, as /sys/block names it (a partition's disk), or "none" (tmpfs, stdin). */
static void device_of(const char *path, char *name, size_t size)
{
	char sys[96], link[PATH_MAX];
	struct stat st;
	ssize_t n;

	snprintf(name, size, "none");
	if (!path || !strcmp(path, "-") || stat(path, &st))
		return;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = '\0';
	strncat(sys, "/partition", sizeof(sys) - strlen(sys) - 1);
	if (!access(sys, F_OK) && strrchr(link, '/'))
		*strrchr(link, '/') = '\0';
	snprintf(name, size, "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
}

void wisdom_key(const char *path, char *buf, size_t size)
{
	char cpu[160], device[PATH_MAX];

	cpu_signature(cpu, sizeof(cpu));
	device_of(path, device, sizeof(device));
	snprintf(buf, size, "cpu=%s simd=%zu device=%s", cpu, blake3_simd_degree(), device);
}

static FILE *open_wisdom(char *path, size_t size)
{
	const char *named = getenv("URING_B3SUM_WISDOM"), *base = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	if (named)
		snprintf(path, size, "%s", named);
	else
		snprintf(path, size, "%s%s/ringsum/wisdom", base ? base : home ? home : "", base ? "" : "/.config");
	return fopen(path, "re");
}

/* "work=cold-file" of a record whose key is key: the record's options, else NULL. */
static char *record_options(char *line, const char *key, enum wisdom_work work, char **measured)
{
	char want[48], *options = strstr(line, " options=");
	size_t key_len = strlen(key);

	snprintf(want, sizeof(want), " work=%s ", wisdom_work_name(work));
	if (!options || strncmp(line, key, key_len) || line[key_len] != ' ' || !strstr(line, want))
		return NULL;
	*options = '\0';
	options[9 + strcspn(options + 9, "\n")] = '\0';
	*measured = strstr(line, " measured=") ? strstr(line, " measured=") + 10 : "(undated)";
	(*measured)[strcspn(*measured, " ")] = '\0';
	return options + 9;
}

/* A record's options into the knobs it may decide, those no one gave; -1 to go on, or 2. */
static int apply_record(struct options *opts, char *options, enum wisdom_work work, const char *where,
			const struct variant *v)
{
	struct options record;
	char *words[MAX_RECORD_WORDS], *save, *word, name[40];
	int nr_words = 1, ret;

	memset(&record, 0, sizeof(record));
	knob_defaults(&record.knobs, v, false);
	words[0] = (char *)where;
	for (word = strtok_r(options, " \t\n", &save); word; word = strtok_r(NULL, " \t\n", &save)) {
		if (nr_words == MAX_RECORD_WORDS)
			return bad_usage(where, "more than %d words", MAX_RECORD_WORDS - 1);
		words[nr_words++] = word;
	}
	for (int i = 1; i < nr_words; i++) {
		const struct knob *k = NULL;

		for (size_t j = 0; j < NR_KNOBS && !k; j++) {
			knob_option_name(&knob_table[j], name + 2, sizeof(name) - 2);
			memcpy(name, "--", 2);
			if (!strcmp(words[i], name))
				k = &knob_table[j];
		}
		if (!k || !(wisdom_works(k) >> work & 1))
			return bad_usage(where, "'%s' is not a choice a %s record makes", words[i],
					 wisdom_work_name(work));
		i += k->type != KNOB_FLAG;
	}
	ret = parse_long_form(&record, nr_words, words, where, v);
	if (ret >= 0)
		return ret;
	for (size_t j = 0; j < NR_KNOBS; j++) {
		if (!(record.given >> j & 1) || opts->given >> j & 1)
			continue;
		knob_set(&opts->knobs, &knob_table[j], knob_get(&record.knobs, &knob_table[j]));
		opts->given |= 1ull << j;
	}
	return -1;
}

/* One regular, non-empty file's residency (never through a symlink inside a tree): 1 cached, 0 cold, -1 not a sample. */
static int sample_file(const char *path, bool walked)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (walked ? O_NOFOLLOW : 0)), cached = -1;
	struct stat st;

	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		cached = mostly_cached(fd, st.st_size);
	close(fd);
	return cached;
}

/*
 * Many files: the tree's work, cold or cached, from its first TREE_SAMPLE
 * regular files, taken by the walk itself (file_list.c) in the order it hashes
 * them; NR_WORKS without one (--check). The walk's order, not readdir's: on a
 * cold tree, reading first the metadata of a directory the walk reaches later
 * made the walk that followed 60-90 ms slower on a 1 GiB tree of 1M files
 * (8f50662391e2), while the walk's own first directory cost nothing.
 */
static enum wisdom_work tree_work(const struct options *opts, unsigned *sampled)
{
	struct source src = { .files = opts->files, .nr_files = opts->nr_files, .recursive = opts->recursive,
			      .list = opts->list, .list_keeps = true };
	struct input in = { .fd = -1 };
	unsigned files = 0, cached = 0, looked = 0;
	struct stat st;
	int one;

	/* a bound on what is looked at: a list's names read here are kept until the hashing takes them */
	while (!opts->check && files < TREE_SAMPLE && looked++ < TREE_LOOK_MAX && source_next(&src, &in)) {
		/* a FILE named on the command line is looked at first: a device or a FIFO is never opened */
		if (in.error || !strcmp(in.path, "-") || (!in.walked && (stat(in.path, &st) || !S_ISREG(st.st_mode))))
			continue;
		if ((one = sample_file(in.path, in.walked)) >= 0) {
			files++;
			cached += one;
		}
	}
	source_close(&src);
	input_free(&in);
	*sampled = files;
	if (!files)
		return NR_WORKS;
	return cached * 2 > files ? WORK_CACHED_TREE : WORK_COLD_TREE;
}

/* The key of a record for the first FILE, or the list's first name (read now, and kept for the hashing). */
static void first_key(struct options *opts, char *key, size_t size)
{
	wisdom_key(opts->list ? name_list_first(opts->list) : opts->nr_files ? opts->files[0] : NULL, key, size);
}

/* The records for this machine, device and kind of work, applied; -1 to go on, or the exit status. */
int apply_wisdom(struct options *opts, const struct variant *v)
{
	char path[PATH_MAX], key[PATH_MAX + 200], line[PATH_MAX + 1024], where[PATH_MAX + 32], *options, *measured;
	bool many = many_files(opts);
	enum wisdom_work tree = NR_WORKS;
	unsigned lineno = 0, found = 0, sampled = 0;
	struct stat st;
	int ret = -1;
	FILE *f;

	if (opts->wisdom_key) {
		first_key(opts, key, sizeof(key));
		printf("%s\n", key);
		return 0;
	}
	if (opts->no_wisdom)
		return -1;
	f = open_wisdom(path, sizeof(path));
	if (f && (fstat(fileno(f), &st) || !S_ISREG(st.st_mode))) {
		fclose(f);	/* /dev/null: wisdom is off, as every sweep has it */
		return -1;
	}
	if (!f) {
		int err = errno;	/* none there (or not ours to read) is no wisdom; anything else, an error */

		if (opts->verbose) {	/* the key costs a read of /proc/cpuinfo: only when it is said */
			first_key(opts, key, sizeof(key));
			fprintf(stderr, "%s: no wisdom for %s (%s: %s): the defaults\n", opts->prog, key, path, strerror(err));
		}
		if (err == ENOENT || err == ENOTDIR || err == EACCES)
			return -1;
		return bad_usage(opts->prog, "%s: %s", path, strerror(err));
	}
	first_key(opts, key, sizeof(key));
	if (many && (tree = tree_work(opts, &sampled)) == NR_WORKS && opts->verbose)
		fprintf(stderr, "%s: no file of the tree to tell a cold tree from a cached one: no tree record\n",
			opts->prog);
	else if (many && opts->verbose)
		fprintf(stderr, "%s: a %s: of %u files sampled, %s in the page cache\n", opts->prog,
			tree == WORK_CACHED_TREE ? "cached tree" : "cold tree", sampled,
			tree == WORK_CACHED_TREE ? "most" : "most not");
	while (ret < 0 && fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		for (enum wisdom_work work = 0; work < NR_WORKS && ret < 0; work++) {
			char copy[sizeof(line)];

			if (many ? work != tree : work == WORK_COLD_TREE || work == WORK_CACHED_TREE)
				continue;
			memcpy(copy, line, sizeof(line));
			if (!(options = record_options(copy, key, work, &measured)))
				continue;
			snprintf(where, sizeof(where), "%s: %.*s:%u", opts->prog, PATH_MAX, path, lineno);
			if (opts->verbose)
				fprintf(stderr, "%s: wisdom for %s work, measured %s (%s:%u):%s%s\n", opts->prog,
					wisdom_work_name(work), measured, path, lineno, *options ? " " : " the defaults",
					options);
			ret = apply_record(opts, options, work, where, v);
			found++;
		}
	}
	fclose(f);
	if (!found && opts->verbose)
		fprintf(stderr, "%s: no wisdom for %s and %s work in %s: the defaults\n", opts->prog, key,
			!many ? "file" : tree == NR_WORKS ? "tree" : wisdom_work_name(tree), path);
	return ret;
}
