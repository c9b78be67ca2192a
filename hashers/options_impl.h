/* SPDX-License-Identifier: MIT */
/*
 * Inside the option unit (knob_table.c, grammar_*.c, options_help.c,
 * defaults_file.c, wisdom.c, options.c): what its files share. Each calls only
 * the files listed above it here; the world outside calls parse_options() and
 * knobs_for_variant() (ringsum.h).
 */
#ifndef RINGSUM_OPTIONS_IMPL_H
#define RINGSUM_OPTIONS_IMPL_H

#include "ringsum.h"

#define ARTICLE_ARGC 9			/* PROG FILE and seven numbers */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KNOB_ROW_COUNT(...) + 1
#define NR_KNOBS (0 RINGSUM_NUMBERS(KNOB_ROW_COUNT) RINGSUM_FLAGS(KNOB_ROW_COUNT))

/* knob_table.c: the table of knobs.h, walking it, and which kinds of work decide each knob in the wisdom */
extern const struct knob knob_table[NR_KNOBS];
void knob_option_name(const struct knob *k, char *buf, size_t size);
unsigned long long knob_get(const struct knobs *knobs, const struct knob *k);
void knob_set(struct knobs *knobs, const struct knob *k, unsigned long long value);
bool knob_used(const struct knob *k, const struct variant *v);
unsigned buffers_per_depth(const struct variant *v);
void knob_defaults(struct knobs *knobs, const struct variant *v, bool article);
int bad_usage(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool parse_count(const char *text, unsigned long long *value);
enum wisdom_work { WORK_COLD_FILE, WORK_CACHED_FILE, WORK_COLD_TREE, WORK_CACHED_TREE, NR_WORKS };
unsigned wisdom_works(const struct knob *k);
const char *wisdom_work_name(enum wisdom_work work);

/* options_help.c: --help and --knobs-json */
void usage(FILE *out, const char *prog, const struct variant *v);
void knobs_json(FILE *out, const struct variant *v);

/* grammar_flags.c: b3sum's options and ours; grammar_positional.c: the article's FILE and seven numbers */
int parse_long_form(struct options *opts, int argc, char **argv, const char *prog, const struct variant *v);
bool is_article_form(int argc, char **argv);
int parse_article_form(struct options *opts, char **argv, const char *prog);

/* defaults_file.c: uring_b3sum's options file, read before the command line */
int parse_defaults_file(struct options *opts, const char *prog, const struct variant *v);

/* wisdom.c: uring_b3sum's measured choices for this machine, device and kind of work, after both */
void wisdom_key(const char *path, char *buf, size_t size);
int apply_wisdom(struct options *opts, const struct variant *v);

#endif
