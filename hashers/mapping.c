/* SPDX-License-Identifier: MIT */
/*
 * A cached file hashed from its mapping of the page cache: alone, split
 * across the cores (input.c finishes it so), or small, beside other files,
 * one a core (ring_consume.c maps them, hashes them side by side, unmaps them).
 */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "faults.h"

/*
 * A mapped file that is truncated while it is hashed faults with SIGBUS. The
 * handler maps zeros over the hole and the rest of the mapping (every page past
 * the new end would fault too: a signal each made a 6 GiB file cut to 1 MiB
 * take 11 s to report), so that hashing runs on, and the file is then reported
 * as changed. A signal handler has no context but globals, hence these.
 */
static volatile sig_atomic_t mapped_file_lost_pages;
static uintptr_t mapped_start, mapped_end;

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t hole = (uintptr_t)info->si_addr & ~(uintptr_t)(page - 1);
	/* zeros from the hole to the end of the file's mapping: a fault outside it gets its page only */
	size_t length = hole >= mapped_start && hole < mapped_end ? mapped_end - hole : (size_t)page;

	(void)sig;
	(void)context;
	mapped_file_lost_pages = 1;
	if (mmap((void *)hole, length, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		_exit(128 + SIGBUS);
}

/*
 * A cached file mapped, to be hashed alone or beside others. No MAP_POPULATE:
 * the hashing threads fault the pages in, in parallel, instead of one serial pass.
 */
int input_map(struct input *in)
{
	void *map = mmap(NULL, in->size, PROT_READ, MAP_SHARED, in->fd, 0);

	if (map == MAP_FAILED)
		return -errno;
	in->mapping = map;
	return 0;
}

void input_unmap(struct input *in)
{
	munmap(in->mapping, in->size);
	in->mapping = NULL;
}

/* While hashing from a mapping: a fault inside [start, end) zeros the rest of it, elsewhere its page. */
static struct sigaction saved_sigbus;

static void guard(uintptr_t start, uintptr_t end)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };

	mapped_file_lost_pages = 0;
	mapped_start = start;
	mapped_end = end;
	sigaction(SIGBUS, &sa, &saved_sigbus);
}

/* Whether a page was lost meanwhile. */
static bool unguard(void)
{
	sigaction(SIGBUS, &saved_sigbus, NULL);
	return mapped_file_lost_pages;
}

/*
 * Around files hashed beside each other: a page lost to a truncation is a
 * page of zeros (every fault is outside one file's range), and afterwards
 * each of them is hashed again alone, which tells which file changed.
 */
void input_guard_mappings(void)
{
	guard(0, 0);
}

bool input_unguard_mappings(void)
{
	return unguard();
}

/* A file alone, its tasks across the cores; its pages lost to a truncation: changed. */
int input_hash_mapped(const struct ring *r, struct input *in)
{
	bool lost;
	int ret;

	if (!in->size)
		return 0;
	if ((ret = input_map(in)) < 0)
		return ret;
	guard((uintptr_t)in->mapping, (uintptr_t)in->mapping + in->size);
	fault_lag_hash();
	/* the whole file at once, every core: a window at a time would wait for the slowest task of each */
	hash_mapped(&in->hasher, in->mapping, in->size, r->cfg->knobs.stage_size, r->cfg->staging,
		    r->cfg->knobs.map_release);
	lost = unguard();
	input_unmap(in);
	return lost ? -ERR_FILE_CHANGED : 0;
}
