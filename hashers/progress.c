/* SPDX-License-Identifier: MIT */
/*
 * --progress: one line on stderr, redrawn in place at most PROGRESS_HZ times a
 * second by the consumer, the only thread that prints hashes. It is taken away
 * before any line lands on the same terminal and put back after it, and cleared
 * at the end: what the program writes stays exactly b3sum's.
 */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ringsum.h"

#define PROGRESS_HZ 4
#define NSEC_PER_SEC 1000000000ll

/* The coarse clock costs a few nanoseconds and ticks every few milliseconds: plenty for 4 redraws a second. */
static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The total is known only for regular files named on the command line: not a tree, a checksum file or a pipe. */
static void count_total(struct progress *p, const struct options *opts)
{
	struct stat st;

	p->total_known = !opts->recursive && !opts->check;
	for (int i = 0; p->total_known && i < opts->nr_files; i++) {
		if (!strcmp(opts->files[i], "-") || stat(opts->files[i], &st) || !S_ISREG(st.st_mode))
			p->total_known = false;
		else
			p->total_bytes += st.st_size;
	}
	p->total_files = opts->nr_files;
}

void progress_init(struct progress *p, const struct options *opts)
{
	struct winsize ws;

	memset(p, 0, sizeof(*p));
	p->on = opts->progress && isatty(STDERR_FILENO);
	if (!p->on)
		return;
	p->prog = opts->prog;
	p->stdout_shared = isatty(STDOUT_FILENO);
	p->width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
	count_total(p, opts);
	p->interval_ns = NSEC_PER_SEC / PROGRESS_HZ;
	p->start_ns = p->drawn_ns = now_ns();
}

static void format_bytes(double bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

static void format_left(double seconds, char *buf, size_t size)
{
	unsigned long s = seconds + 0.5;

	if (s >= 3600)
		snprintf(buf, size, ", %lu:%02lu:%02lu left", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, size, ", %lu:%02lu left", s / 60, s % 60);
}

static void compose(struct progress *p, uint64_t bytes, unsigned files, int64_t now)
{
	double seconds = (double)(now - p->start_ns) / NSEC_PER_SEC, rate = seconds > 0 ? bytes / seconds : 0;
	char done[32], total[32], speed[32], left[48] = "";
	int n;

	format_bytes(bytes, done, sizeof(done));
	format_bytes(rate, speed, sizeof(speed));
	if (p->total_known) {
		format_bytes(p->total_bytes, total, sizeof(total));
		if (rate > 0 && p->total_bytes > bytes)
			format_left((p->total_bytes - bytes) / rate, left, sizeof(left));
		n = snprintf(p->line, sizeof(p->line), "%s: %s of %s (%.0f%%), %u of %u file%s, %s/s%s", p->prog,
			     done, total, p->total_bytes ? 100.0 * bytes / p->total_bytes : 100.0, files,
			     p->total_files, p->total_files == 1 ? "" : "s", speed, left);
	} else {
		n = snprintf(p->line, sizeof(p->line), "%s: %s, %u file%s, %s/s", p->prog, done, files,
			     files == 1 ? "" : "s", speed);
	}
	/* A line as wide as the terminal would wrap, and \r would no longer get back to its start. */
	p->len = n < 0 ? 0 : (unsigned)n < p->width - 1 ? (unsigned)n : p->width - 1;
	if (p->len >= sizeof(p->line))
		p->len = sizeof(p->line) - 1;
}

static void draw(struct progress *p)
{
	fprintf(stderr, "\r%.*s\033[K", (int)p->len, p->line);
	fflush(stderr);
	p->shown = true;
}

void progress_draw(struct progress *p, uint64_t bytes, unsigned files)
{
	int64_t now = now_ns();

	if (now - p->drawn_ns < p->interval_ns)
		return;
	p->drawn_ns = now;
	compose(p, bytes, files, now);
	draw(p);
}

static void erase(struct progress *p)
{
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = false;
}

/* Before a line on stderr, or on stdout when that is the same terminal. */
void progress_hide(struct progress *p, bool on_stderr)
{
	p->hidden = p->shown && (on_stderr || p->stdout_shared);
	if (p->hidden)
		erase(p);
}

/* After it: the progress line back under it. */
void progress_unhide(struct progress *p)
{
	if (!p->hidden)
		return;
	fflush(stdout);
	draw(p);
	p->hidden = false;
}

void progress_end(struct progress *p)
{
	if (p->shown)
		erase(p);
	p->on = false;
}
