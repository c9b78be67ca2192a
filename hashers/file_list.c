/* SPDX-License-Identifier: MIT */
/*
 * The inputs, one at a time: the FILEs of the command line, the files of the
 * directories among them with --recursive (walked here), or with --check the
 * lines of the checksum files (checksum_file.c), taken as the producer needs
 * them so that memory does not grow with the number of lines or files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

static int next_file(struct source *s, struct input *in)
{
	int ret;

	for (;;) {
		if ((ret = next_walked(&s->walk, in)))
			return ret;
		if (s->next_file == s->nr_files)
			return 0;
		if (!s->recursive) {
			in->path = s->files[s->next_file++];
			return 1;
		}
		if ((ret = start_walk(s, in, s->files[s->next_file++])))
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
	in->fd = -1;
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
	in->fd = -1;
	free(in->text);
	in->text = NULL;
}

