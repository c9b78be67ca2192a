/* SPDX-License-Identifier: MIT */
/*
 * The inputs, one at a time: the FILEs of the command line or the names of a
 * --files0-from list, the files of the directories among them with
 * --recursive (walked here), or with --check the lines of the checksum files
 * (checksum_file.c), taken as the producer needs them so that memory does
 * not grow with the number of lines or files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringsum.h"

/* --- --recursive: a depth-first walk with its own stack, one directory's sorted names per level --- */

/*
 * A directory sorts as its name followed by '/', a file as its name alone: the
 * walk then gives whole paths in byte order, as `find DIR -type f | LC_ALL=C sort`.
 * Names are unique, so two entries differ at or before the shorter one's end.
 */
static int compare_entries(const void *a, const void *b, void *names)
{
	const char *x = (const char *)names + *(const size_t *)a;
	const char *y = (const char *)names + *(const size_t *)b;
	unsigned char end_x = *x++ == 'd' ? '/' : '\0', end_y = *y++ == 'd' ? '/' : '\0';

	for (;; x++, y++) {
		unsigned char cx = *x ? (unsigned char)*x : end_x, cy = *y ? (unsigned char)*y : end_y;

		if (cx != cy || !*x || !*y)
			return cx - cy;
	}
}

/* 'd' for a directory, 'f' for a regular file, 0 for what is skipped: symlinks, FIFOs, sockets, devices. */
static char entry_kind(DIR *dir, const struct dirent *e)
{
	unsigned char type = e->d_type;
	struct stat st;

	if (type == DT_UNKNOWN) {
		/* a name that cannot be looked at is kept as a file: opening it reports why */
		if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			return 'f';
		type = IFTODT(st.st_mode);
	}
	return type == DT_DIR ? 'd' : type == DT_REG ? 'f' : 0;
}

static int read_entries(struct walk_level *l, DIR *dir)
{
	size_t used = 0, len;
	struct dirent *e;
	char kind;

	while ((errno = 0, e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !(kind = entry_kind(dir, e)))
			continue;
		len = strlen(e->d_name);
		if (grow((void **)&l->names, &l->names_size, used + len + 2, 1) ||
		    grow((void **)&l->entries, &l->entries_size, l->nr_entries + 1, sizeof(size_t)))
			return -ENOMEM;
		l->entries[l->nr_entries++] = used;
		l->names[used] = kind;
		memcpy(l->names + used + 1, e->d_name, len + 1);
		used += len + 2;
	}
	if (errno)
		return -errno;
	if (l->nr_entries)	/* an empty directory has no array to sort */
		qsort_r(l->entries, l->nr_entries, sizeof(size_t), compare_entries, l->names);
	return 0;
}

/*
 * Read the directory at w->path (path_len bytes, '/' not yet added) onto the
 * stack. Directories found inside are not followed if they became symlinks
 * since; one named on the command line is, as b3sum opens what it is given.
 * It is closed at once: open descriptors do not grow with the depth.
 */
static int walk_push(struct walk *w, size_t path_len, bool inside)
{
	struct walk_level *l;
	DIR *dir;
	int fd, ret;

	if (grow((void **)&w->levels, &w->capacity, w->depth + 1, sizeof(*w->levels)) ||
	    grow((void **)&w->path, &w->path_size, path_len + 2, 1))
		return -ENOMEM;
	w->path[path_len] = '\0';
	fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (inside ? O_NOFOLLOW : 0));
	if (fd < 0)
		return -errno;
	if (!(dir = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	l = &w->levels[w->depth++];
	*l = (struct walk_level){ .path_len = path_len };
	/* "DIR/" stays as it is, not "DIR//" */
	if (!path_len || w->path[path_len - 1] != '/')
		w->path[l->path_len++] = '/';
	ret = read_entries(l, dir);
	closedir(dir);
	return ret;
}

static void walk_pop(struct walk *w)
{
	struct walk_level *l = &w->levels[--w->depth];

	free(l->names);
	free(l->entries);
}

/* The input for w->path: a file to hash, or a directory that could not be read, with its error. */
static int walked_input(struct walk *w, struct input *in, size_t path_len, int err)
{
	if (grow_text(in, path_len + 1) < 0)
		return -ENOMEM;
	memcpy(in->text, w->path, path_len);
	in->text[path_len] = '\0';
	in->path = in->text;
	in->walked = true;
	in->error = err;
	return 1;
}

/* Descend into a directory (1 with an input only if it failed), or fill in the next file (1). */
static int walk_step(struct walk *w, struct input *in, const char *entry, size_t path_len)
{
	int ret;

	if (*entry == 'f')
		return walked_input(w, in, path_len, 0);
	if (!(ret = walk_push(w, path_len, true)))
		return 0;
	/* what was read of it is still walked: b3sum goes on after a file it cannot read */
	return walked_input(w, in, path_len, ret);
}

/* The next file of the walk under way: 1 with an input, 0 when it is over, negative on no memory. */
static int next_walked(struct walk *w, struct input *in)
{
	while (w->depth) {
		struct walk_level *l = &w->levels[w->depth - 1];
		const char *entry;
		size_t len;
		int ret;

		if (l->next == l->nr_entries) {
			walk_pop(w);
			continue;
		}
		entry = l->names + l->entries[l->next++];
		len = strlen(entry + 1);
		if (grow((void **)&w->path, &w->path_size, l->path_len + len + 2, 1))
			return -ENOMEM;
		memcpy(w->path + l->path_len, entry + 1, len);
		if ((ret = walk_step(w, in, entry, l->path_len + len)))
			return ret;
	}
	return 0;
}

/* A FILE with --recursive: a directory starts a walk (0, or 1 with its error), anything else is itself (1). */
static int start_walk(struct source *s, struct input *in, const char *name)
{
	struct stat st;
	size_t len = strlen(name);
	int ret;

	in->path = name;
	if (!strcmp(name, "-") || stat(name, &st) || !S_ISDIR(st.st_mode))
		return 1;
	if (grow((void **)&s->walk.path, &s->walk.path_size, len + 2, 1))
		return -ENOMEM;
	memcpy(s->walk.path, name, len);
	if (!(ret = walk_push(&s->walk, len, false)))
		return 0;
	in->error = ret;
	return 1;
}

/* --- --files0-from: names each ended by a NUL, as GNU du and wc read them (find -print0) --- */

/*
 * One list, read once, as the hashing takes its names. The wisdom looks at
 * the first files before the hashing begins (wisdom.c), and standard input
 * cannot be read twice: the names a source that keeps reads stay in kept,
 * and every source takes those first, then the rest from the file.
 */
struct name_list {
	FILE *f;
	const char *name;		/* as given; "-" is standard input */
	char *kept;			/* the names read by keeping sources, each ended by its NUL */
	size_t kept_len, kept_size;
	char entry[PATH_MAX + 1];	/* the name read last, not kept */
	int error;			/* opening or reading it failed: every source is told so */
};

/* A list that cannot be opened fails when the first name is asked of it, as one that cannot be read. */
int name_list_open(struct name_list **list, const char *name)
{
	struct name_list *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->name = name;
	l->f = strcmp(name, "-") ? fopen(name, "re") : stdin;
	if (!l->f)
		l->error = -errno;
	*list = l;
	return 0;
}

const char *name_list_name(const struct name_list *l)
{
	return l->name;
}

void name_list_close(struct name_list *l)
{
	if (!l)
		return;
	if (l->f && l->f != stdin)
		fclose(l->f);
	free(l->kept);
	free(l);
}

/*
 * The next name from the file into l->entry: its length (0: an empty one), or
 * -1 at the end. The last may end without its NUL. Of a name of PATH_MAX bytes
 * or more, PATH_MAX are kept, which no system call takes (ENAMETOOLONG), and
 * the rest is read past: memory does not grow with what the list holds.
 */
static ssize_t read_name(struct name_list *l)
{
	size_t len = 0;
	int c;

	while ((c = getc_unlocked(l->f)) != EOF && c != '\0')
		if (len < PATH_MAX)
			l->entry[len++] = (char)c;
	if (c == EOF && (ferror(l->f) || !len))
		return -1;
	l->entry[len] = '\0';
	return len;
}

/* The next name for the source at *offset: 1 with it in *name, 0 at the end, negative on a read error. */
static int list_next(struct name_list *l, size_t *offset, bool keep, const char **name)
{
	ssize_t len;

	if (*offset < l->kept_len) {
		*name = l->kept + *offset;
		*offset += strlen(*name) + 1;
		return 1;
	}
	if (l->error)
		return l->error;
	errno = 0;
	len = read_name(l);
	if (len == -1 && ferror(l->f))
		return l->error = errno ? -errno : -EIO;
	if (len == -1)
		return 0;
	if (keep) {
		size_t n = strlen(l->entry) + 1;

		if (grow((void **)&l->kept, &l->kept_size, l->kept_len + n, 1))
			return -ENOMEM;
		memcpy(l->kept + l->kept_len, l->entry, n);
		l->kept_len += n;
		*offset = l->kept_len;
	}
	*name = l->entry;
	return 1;
}

/* The first name of the list, for the wisdom's key (kept for the hashing), or NULL. */
const char *name_list_first(struct name_list *l)
{
	size_t offset = 0;
	const char *name = NULL;

	return list_next(l, &offset, true, &name) > 0 ? name : NULL;
}

/*
 * The next name of the list, copied into the input's text: the list's buffer
 * is read over by the next name. A zero-length name, or "-" when the list is
 * standard input, is an input that fails, named by its place in the list.
 */
static int next_listed(struct source *s, struct input *in, const char **name)
{
	const char *entry = NULL;
	size_t len;
	int ret, err = 0;

	if ((ret = list_next(s->list, &s->list_offset, s->list_keeps, &entry)) <= 0) {
		s->list_failed = ret < 0;
		return ret;
	}
	s->list_number++;
	len = strlen(entry);
	if (!len)
		err = -ERR_EMPTY_NAME;
	else if (!strcmp(entry, "-") && !strcmp(s->list->name, "-"))
		err = -ERR_STDIN_IS_LIST;
	if (grow_text(in, (err ? strlen(s->list->name) + 24 : len + 1)))
		return -ENOMEM;
	if (err)
		sprintf(in->text, "%s:%lu", s->list->name, s->list_number);
	else
		memcpy(in->text, entry, len + 1);
	in->error = err;
	*name = in->text;
	return 1;
}

/* The next FILE of the command line, or name of the list: 1 with it, 0 at the end, negative on an error. */
static int next_name(struct source *s, struct input *in, const char **name)
{
	if (s->list)
		return next_listed(s, in, name);
	if (s->next_file == s->nr_files)
		return 0;
	*name = s->files[s->next_file++];
	return 1;
}

static int next_file(struct source *s, struct input *in)
{
	const char *name;
	int ret;

	for (;;) {
		if ((ret = next_walked(&s->walk, in)))
			return ret;
		if ((ret = next_name(s, in, &name)) <= 0)
			return ret;
		if (!s->recursive || in->error) {
			in->path = name;
			return 1;
		}
		if ((ret = start_walk(s, in, name)))
			return ret;
	}
}

/* Fill in the next input, keeping the slot's text buffer. Returns 1, or 0 when there are no more. */
int source_next(struct source *s, struct input *in)
{
	char *text = in->text;
	size_t text_size = in->text_size;
	int ret;

	memset(in, 0, sizeof(*in));
	in->text = text;
	in->text_size = text_size;
	in->fd = in->direct_fd = -1;
	if (s->fatal)
		return 0;
	if (s->check)
		return next_check_line(s, in) > 0;
	if ((ret = next_file(s, in)) < 0)
		s->fatal = ret;
	return ret > 0;
}

void source_close(struct source *s)
{
	if (s->checkfile && s->checkfile != stdin)
		fclose(s->checkfile);
	s->checkfile = NULL;
	free(s->line);
	s->line = NULL;
	while (s->walk.depth)
		walk_pop(&s->walk);
	free(s->walk.levels);
	free(s->walk.path);
	s->walk = (struct walk){ 0 };
}

void input_free(struct input *in)
{
	if (in->fd >= 0 && !in->borrowed_fd)
		close(in->fd);
	if (in->direct_fd >= 0)
		close(in->direct_fd);
	in->fd = in->direct_fd = -1;
	free(in->text);
	in->text = NULL;
}

