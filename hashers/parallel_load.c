/* SPDX-License-Identifier: MIT */
/*
 * parallel_hash.h's entry points for the C core, loaded when first needed.
 *
 * Hashing on every core is C++ (parallel_hash.cpp, staging_trial.cpp, over
 * TBB), built into parallel_hash.so beside the programs. Loading libstdc++
 * and Debian's libtbb (linked BIND_NOW) at start cost 0.59 ms of the 1.55 ms
 * an invocation on a 4 KiB file took on the Zen 5, where b3sum took 1.06
 * (docs/cold-path/startup-zen5). So the programs link only BLAKE3's serial C,
 * hash a block in place with it, and dlopen() the library the first time a
 * hash needs more: every core, a staging, or a trial. Without the library
 * they say so once and hash everything on one core, alike.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "parallel_hash.h"

#define LIBRARY "parallel_hash.so"

static struct parallel {
	void (*hash_parallel)(blake3_hasher *, const void *, size_t, enum staging);
	void (*hash_serial)(blake3_hasher *, const void *, size_t, enum staging);
	void (*staging_trial_result)(enum trial_of, struct staging_trial *);
	void (*staging_set_task_hook)(void (*)(enum staging, size_t));
	void (*hash_mapped)(blake3_hasher *, const void *, size_t, size_t, enum staging, size_t);
	void (*hash_limit_threads)(size_t);
} lib;
/* lib holds the library's entry points; --verbose asks the trials' state from the producer too */
static _Atomic bool loaded;
static size_t thread_limit;			/* --num-threads, for the library once loaded; 0: none */
static void (*task_hook)(enum staging, size_t);	/* the faults build's, likewise */
static pthread_once_t once = PTHREAD_ONCE_INIT;

int program_dir(char *dir, size_t size)
{
	ssize_t len = readlink("/proc/self/exe", dir, size - 1);

	if (len < 0)
		return -errno;
	if (!len || (size_t)len >= size - 1 || dir[0] != '/')
		return -ENAMETOOLONG;	/* cut short, or not a path */
	dir[len] = '\0';
	*strrchr(dir, '/') = '\0';
	return 0;
}

/* The programs' tree: bin/ beside lib/ringsum/ (the build, make install), or, for the package's comparison programs, in it. */
static void *open_beside_programs(char *error, size_t size)
{
	static const char *const places[] = { "/../lib/ringsum/" LIBRARY, "/../" LIBRARY };
	char exe[PATH_MAX], path[PATH_MAX + 64];
	int err = program_dir(exe, sizeof(exe));
	void *handle;

	if (err) {
		snprintf(error, size, "/proc/self/exe: %s", strerror(-err));
		return NULL;
	}
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", exe, places[i]);
		if (access(path, F_OK))
			continue;
		/* lazily, as at start: RTLD_NOW bound every symbol of libstdc++ too, 0.1-0.2 ms more */
		if (!(handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL)))
			snprintf(error, size, "%s", dlerror());
		return handle;
	}
	snprintf(error, size, "not in %s/../lib/ringsum", exe);
	return NULL;
}

#define ENTRY(name) (*(void **)&lib.name = dlsym(handle, #name))

static void load(void)
{
	char error[PATH_MAX + 128] = "";
	void *handle = open_beside_programs(error, sizeof(error));

	if (handle && ENTRY(hash_parallel) && ENTRY(hash_serial) && ENTRY(staging_trial_result) &&
	    ENTRY(staging_set_task_hook) && ENTRY(hash_mapped) && ENTRY(hash_limit_threads)) {
		if (thread_limit)
			lib.hash_limit_threads(thread_limit);
		if (task_hook)
			lib.staging_set_task_hook(task_hook);
		atomic_store_explicit(&loaded, true, memory_order_release);
		return;
	}
	if (handle)
		snprintf(error, sizeof(error), "%s", dlerror());
	fprintf(stderr, "%s: cannot load %s (%s): hashing on one core\n", program_invocation_short_name, LIBRARY, error);
}

static bool is_loaded(void)
{
	return atomic_load_explicit(&loaded, memory_order_acquire);
}

static bool have_library(void)
{
	pthread_once(&once, load);
	return is_loaded();
}

void hash_serial(blake3_hasher *hasher, const void *data, size_t len, enum staging how)
{
	/* with no library loaded, no trial has a winner yet */
	bool in_place = how == STAGE_IN_PLACE || (how == STAGE_MEASURED && len < HASH_TRIAL_MIN);

	if ((is_loaded() || !in_place) && have_library())
		lib.hash_serial(hasher, data, len, how);
	else
		blake3_hasher_update(hasher, data, len);
}

void hash_parallel(blake3_hasher *hasher, const void *data, size_t len, enum staging how)
{
	if (have_library())
		lib.hash_parallel(hasher, data, len, how);
	else
		blake3_hasher_update(hasher, data, len);
}

void hash_mapped(blake3_hasher *hasher, const void *data, size_t len, size_t stage, enum staging how, size_t release)
{
	if (have_library())
		lib.hash_mapped(hasher, data, len, stage, how, release);
	else
		blake3_hasher_update(hasher, data, len);
}

/* Not loaded: no trial has begun (staging_trial.cpp says STAGE_MEASURED while one measures; BLAKE3's own join has none). */
void staging_trial_result(enum trial_of which, struct staging_trial *out)
{
	if (is_loaded()) {
		lib.staging_trial_result(which, out);
		return;
	}
	memset(out, 0, sizeof(*out));
#ifdef RINGSUM_BLAKE3_JOIN
	out->winner = STAGE_IN_PLACE;
#else
	out->winner = STAGE_MEASURED;
#endif
}

void staging_set_task_hook(void (*hook)(enum staging how, size_t len))
{
	task_hook = hook;
	if (is_loaded())
		lib.staging_set_task_hook(hook);
}

void hash_limit_threads(size_t threads)
{
	thread_limit = threads;
	if (is_loaded())
		lib.hash_limit_threads(threads);
}

/* TBB's arena is as wide as the CPUs this process may run on (taskset, a cpuset): asked here without starting it. */
size_t hash_max_threads(void)
{
	cpu_set_t cpus;
	size_t n = sched_getaffinity(0, sizeof(cpus), &cpus) ? (size_t)sysconf(_SC_NPROCESSORS_ONLN) : (size_t)CPU_COUNT(&cpus);

	if (n < 1)
		n = 1;
	return thread_limit && thread_limit < n ? thread_limit : n;
}
