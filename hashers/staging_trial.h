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

/*
 * One pair of a trial: hash_half(0, staging) hashes the first half, of
 * first_len bytes, and hash_half(1, staging) the second, one in place and
 * one prefetched in this thread's order; each is timed and the pair recorded.
 */
template <typename HashHalf>
void trial_pair(enum trial_of which, size_t first_len, size_t second_len, HashHalf hash_half) noexcept {
  bool prefetch_first = trial_prefetch_first();
  uint64_t ns[2], start = trial_clock_ns();
  size_t len[2];
  hash_half(0, prefetch_first ? STAGE_PREFETCH : STAGE_IN_PLACE);
  uint64_t middle = trial_clock_ns();
  hash_half(1, prefetch_first ? STAGE_IN_PLACE : STAGE_PREFETCH);
  ns[prefetch_first] = middle - start, len[prefetch_first] = first_len;
  ns[!prefetch_first] = trial_clock_ns() - middle, len[!prefetch_first] = second_len;
  trial_record(which, ns, len);
}

#endif
