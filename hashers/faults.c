/* SPDX-License-Identifier: MIT */
/* Fault injection for the test builds (make's faults flavour, -DRINGSUM_FAULTS); empty in every other build. */
#ifdef RINGSUM_FAULTS
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"

/*
 * Test builds only: RINGSUM_FAULTS="short:3,eagain:5,eintr:6,ecanceled:7,eio:9"
 * replaces the result of the Nth completion of each file (short: half the bytes, if more than one).
 * The regressions that `ringsum check` must catch (docs/regression-check.md):
 * slow:P does P% more CPU work, as slower code would (BLAKE3 over P% of the bytes once more); depth:N ignores --queue-depth
 * and keeps at most N reads unfinished; buffered:1 drops O_DIRECT; tick:MS redraws
 * --progress every MS milliseconds (0: after every block and file), so tests need no timing;
 * readlag:MS waits before every read is queued (a slow producer), devlag:MS holds every read
 * MS in the kernel before it starts (a slow device: the read is out, and has not finished),
 * hashlag:MS before every block
 * is hashed, and every file from its mapping once mapped (a slow core), so a test can put
 * the reads behind the hashing or ahead of it, or change a mapped file before it is hashed;
 * inplacelag:US and prefetchlag:US wait before each task of a mapped file (or half of one),
 * and each ring block (or half), hashed with that staging, so a test can make either lose a
 * staging trial; sidelag:US and onelag:US before each small file of the ring hashed side by
 * side or one by one, so that either loses the trial of the two (ring_consume.c); sidetrial:B
 * tries side by side after B bytes of small files, not SIDE_TRIAL_AFTER (0: from the first).
 * Without the variable, a file `ringsum-faults` beside the binary holds the spec: one run can
 * then time several injected builds side by side (harness/check/power.py).
 */
/* One ring per process: the spec, once read, is the process's. */
static struct fault { uint64_t completion; int res; } faults[16];
static unsigned nr_faults;
static unsigned long long slow_percent;
static unsigned read_lag_ms, hash_lag_ms, device_lag_ms;
static unsigned staging_lag_us[STAGE_MEASURED];
static unsigned side_lag_us, one_lag_us;

static void inject_lag(unsigned long long us)
{
	struct timespec lag = { us / 1000000, us % 1000000 * 1000L };

	while (us && nanosleep(&lag, &lag) && errno == EINTR)
		;
}

/* parallel_hash.cpp's task hook: the staging trial's tasks, slowed by their staging. */
static void lag_task(enum staging how, size_t len)
{
	(void)len;
	inject_lag(staging_lag_us[how]);
}

static const char *fault_spec(char *buf, size_t size)
{
	const char *spec = getenv("RINGSUM_FAULTS");
	char exe[4096];
	FILE *f;

	if (spec || program_dir(exe, sizeof(exe) - 32))
		return spec;
	strcat(exe, "/ringsum-faults");
	f = fopen(exe, "re");
	if (!f)
		return NULL;
	spec = fgets(buf, size, f);
	fclose(f);
	return spec;
}

void faults_setup(struct ring_config *cfg, struct progress *progress)
{
	static const struct { const char *name; int res; } kinds[] = {
		{ "short", 0 }, { "eagain", -EAGAIN }, { "eintr", -EINTR },
		{ "ecanceled", -ECANCELED }, { "eio", -EIO },
	};
	char buf[256];
	const char *spec = fault_spec(buf, sizeof(buf));
	char name[16];
	unsigned long long n;
	int used;

	while (spec && nr_faults < 16 && sscanf(spec, "%15[a-z]:%llu%n", name, &n, &used) == 2) {
		for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(name, kinds[i].name))
				faults[nr_faults++] = (struct fault){ n, kinds[i].res };
		if (!strcmp(name, "slow"))
			slow_percent = n;
		else if (!strcmp(name, "depth") && n > 0 && n < cfg->knobs.queue_depth)
			cfg->knobs.queue_depth = n, cfg->depth_grows = false;
		else if (!strcmp(name, "tick"))
			progress->interval_ns = n * 1000000;
		else if (!strcmp(name, "buffered") && n)
			cfg->knobs.direct = cfg->direct_when_cold = false;
		else if (!strcmp(name, "readlag"))
			read_lag_ms = n;
		else if (!strcmp(name, "hashlag"))
			hash_lag_ms = n;
		else if (!strcmp(name, "devlag") && n < 1000000)
			device_lag_ms = n;
		else if (!strcmp(name, "inplacelag") && n < 1000000)
			staging_lag_us[STAGE_IN_PLACE] = n;
		else if (!strcmp(name, "prefetchlag") && n < 1000000)
			staging_lag_us[STAGE_PREFETCH] = n;
		else if (!strcmp(name, "sidelag") && n < 1000000)
			side_lag_us = n;
		else if (!strcmp(name, "onelag") && n < 1000000)
			one_lag_us = n;
		else if (!strcmp(name, "sidetrial"))
			cfg->side_trial_after = n;
		spec += used + (spec[used] == ',');
	}
	if (staging_lag_us[STAGE_IN_PLACE] || staging_lag_us[STAGE_PREFETCH])
		staging_set_task_hook(lag_task);
}

int fault_result(const struct input *in, int res)
{
	for (unsigned i = 0; i < nr_faults; i++)
		if (faults[i].completion == in->completions && res > 0)
			return faults[i].res ? faults[i].res : res > 1 ? res / 2 : res;
	return res;
}

/*
 * Slower code, as a regression makes it: P% more CPU work, BLAKE3 over P% of the
 * bytes hashed once more (on one core), so that instruction counts see it as wall
 * time does (a busy wait on the clock is invisible to an instruction count).
 */
void fault_slowdown(uint64_t bytes_hashed)
{
	static const uint8_t zeros[1u << 16];
	uint64_t left = bytes_hashed * slow_percent / 100;
	blake3_hasher extra;

	blake3_hasher_init(&extra);
	for (; left; left -= left < sizeof(zeros) ? left : sizeof(zeros))
		blake3_hasher_update(&extra, zeros, left < sizeof(zeros) ? left : sizeof(zeros));
}

void fault_lag_read(void)
{
	inject_lag(read_lag_ms * 1000ull);
}

void fault_lag_hash(void)
{
	inject_lag(hash_lag_ms * 1000ull);
}

void fault_lag_small(bool side)
{
	inject_lag(side ? side_lag_us : one_lag_us);
}

/*
 * devlag: a timeout linked before the read, its expiry a success (so the read
 * then starts), its completion carrying no cell: ring.c passes over it. Both
 * go in one submission, or the link would end with the first.
 */
int fault_lag_device(struct io_uring *uring)
{
	static struct __kernel_timespec lag;
	struct io_uring_sqe *sqe;

	if (!device_lag_ms)
		return 0;
	if (io_uring_sq_space_left(uring) < 2 && io_uring_submit(uring) < 0)
		return -EBUSY;
	if (!(sqe = io_uring_get_sqe(uring)))
		return -EBUSY;
	lag = (struct __kernel_timespec){ device_lag_ms / 1000, device_lag_ms % 1000 * 1000000LL };
	io_uring_prep_timeout(sqe, &lag, 0, IORING_TIMEOUT_ETIME_SUCCESS);
	io_uring_sqe_set_data(sqe, NULL);
	sqe->flags |= IOSQE_IO_LINK;
	return 0;
}
#endif
