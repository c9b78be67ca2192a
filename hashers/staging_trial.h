/* SPDX-License-Identifier: MIT */
/* The staging trials (staging_trial.cpp), for parallel_hash.cpp: C++ only. */
#ifndef RINGSUM_STAGING_TRIAL_H
#define RINGSUM_STAGING_TRIAL_H

#include <cstddef>
#include <cstdint>

#include "parallel_hash.h"

/* The trial's winner: STAGE_IN_PLACE or STAGE_PREFETCH; -1 while it measures. */
int trial_winner(enum trial_of which) noexcept;
/* The same for a task about to be hashed, counted: enough tasks after a decision start the trial again. */
int trial_task_winner(enum trial_of which) noexcept;
/* This thread's next pair's order: its prefetched half first every other pair. */
bool trial_prefetch_first() noexcept;
/* A pair measured: [0] its half hashed in place, [1] its half prefetched (nanoseconds, bytes). */
void trial_record(enum trial_of which, const uint64_t ns[2], const size_t len[2]) noexcept;
uint64_t trial_clock_ns() noexcept;

#endif
