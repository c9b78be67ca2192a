// SPDX-License-Identifier: MIT
/*
 * The staging trials (STAGE_MEASURED): in place against prefetched, measured
 * on the data being hashed, one trial for the mapped files' tasks and one for
 * the ring's blocks (parallel_hash.cpp hashes the pairs; this keeps the score).
 *
 * The first tasks of mapped files are each a pair: one half hashed in place,
 * the other prefetched, each timed, the order turned round every other task
 * (in place first, then prefetched first) so that a drift in speed favours
 * neither. Each pair gives prefetched time per byte over in place's. Once
 * TRIAL_PAIRS pairs are in, from every thread, they decide for the rest of the
 * process: prefetched if it was faster in at least TRIAL_WINS of them (a sign
 * test, one-sided at 2.5%) and by at least TRIAL_MARGIN at their median; in
 * place otherwise. A pair is two halves of one task, not two tasks in turn:
 * on the Zen 5 a cached file's 1 MiB tasks took 112-135 us or 220-250 us by
 * where in the file they lay (the same for both candidates: the page cache's
 * folios there, not the hashing), so a pair of neighbouring tasks often
 * straddled the two and was noise; the trial of whole tasks found prefetching
 * faster in only 19-24 of 32 pairs at a median of 0.86-0.90, and kept in place
 * in 12 of 20 executions (by hand: prefetch-zen5-run's README). The pairs
 * were noisy before too: when the trial was of reading once, on a cached
 * 1 GiB file on the Zen 3 (add026ac3c38, docs/wisdom/staging-trial, 82
 * executions), their median ran 0.96-1.16. The tasks are the file's own, at
 * its grain: nothing is hashed twice and no join waits at a chunk's end, so
 * the trial costs what the losing candidate's halves took beyond the winner's
 * rate, and three clock reads per task. The ring's trial is the same, a
 * block's two halves a pair (parallel_hash.cpp's hash_ring).
 *
 * A decision is measured again, RETRIAL_TASKS tasks after it, and then after
 * four times as many each time: the first tasks need not be like the rest. In one
 * `make ledger` on the Zen 5 (docs/ledger/8f50662391e2, hot-staging) the first
 * trial kept in place in 15 of 22 executions while prefetching, forced, took
 * 0.87 of the defaults' time; in place and prefetching are within 1-2% of each
 * other where it does not pay (4K folios), so a trial again costs little.
 */
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "staging_trial.h"

namespace {

constexpr unsigned TRIAL_PAIRS = 32;
constexpr unsigned TRIAL_WINS = 22;
constexpr double TRIAL_MARGIN = 0.99;
constexpr uint64_t RETRIAL_TASKS = 128;  // 128 MiB of a mapped file's 1 MiB tasks, then 512, 2048, ...

struct trial_state {
  std::atomic<int> winner{-1};  // a staging once decided
  std::atomic<unsigned> claimed{0}, filled{0};
  double ratios[TRIAL_PAIRS];
  // these two stored before winner; atomic, since a trial again may store them while a reader reads
  std::atomic<double> median{0};
  std::atomic<unsigned> prefetch_wins{0};
  std::atomic<uint64_t> ns[2]{}, bytes[2]{};  // the trial's tasks: [0] in place, [1] prefetched
  std::atomic<uint64_t> tasks{0};
  std::atomic<unsigned> decided{0};  // trials decided
  std::atomic<int> last{-1};         // the last one's winner: what a trial again is measuring against
  std::atomic<uint64_t> since{0};    // tasks hashed since the last decision
};
trial_state trials[2];  // [TRIAL_MAPPED], [TRIAL_RING]
thread_local unsigned trial_done;  // this thread's trial tasks so far, of either

// The last pair's thread: every ratio is visible through filled's release sequence.
void trial_decide(trial_state &trial) {
  double sorted[TRIAL_PAIRS];
  std::copy(trial.ratios, trial.ratios + TRIAL_PAIRS, sorted);
  std::sort(sorted, sorted + TRIAL_PAIRS);
  double median = (sorted[(TRIAL_PAIRS - 1) / 2] + sorted[TRIAL_PAIRS / 2]) / 2;
  auto wins = static_cast<unsigned>(std::lower_bound(sorted, sorted + TRIAL_PAIRS, 1.0) - sorted);
  trial.median.store(median, std::memory_order_relaxed);
  trial.prefetch_wins.store(wins, std::memory_order_relaxed);
  bool prefetch = wins >= TRIAL_WINS && median < TRIAL_MARGIN;
  trial.since.store(0, std::memory_order_relaxed);
  trial.decided.fetch_add(1, std::memory_order_relaxed);
  trial.last.store(prefetch ? STAGE_PREFETCH : STAGE_IN_PLACE, std::memory_order_release);
  trial.winner.store(prefetch ? STAGE_PREFETCH : STAGE_IN_PLACE, std::memory_order_release);
}

// Measuring again: the slots first, so that a thread that sees no winner finds room. A pair
// of the last trial still being hashed may land in this one: it measured the same thing.
void trial_again(trial_state &trial) {
  trial.claimed.store(0, std::memory_order_relaxed);
  trial.filled.store(0, std::memory_order_relaxed);
  trial.winner.store(-1, std::memory_order_release);
}

}  // namespace

uint64_t trial_clock_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

int trial_winner(enum trial_of which) noexcept {
  return trials[which].winner.load(std::memory_order_acquire);
}

int trial_task_winner(enum trial_of which) noexcept {
  trial_state &trial = trials[which];
  int winner = trial.winner.load(std::memory_order_acquire);
  if (winner < 0)
    return winner;
  unsigned shift = 2 * std::min(trial.decided.load(std::memory_order_relaxed) - 1, 8u);
  if (trial.since.fetch_add(1, std::memory_order_relaxed) + 1 == RETRIAL_TASKS << shift)
    trial_again(trial);  // this task still takes the winner; the next ones measure
  return winner;
}

bool trial_prefetch_first() noexcept {
  return trial_done++ % 2;
}

void trial_record(enum trial_of which, const uint64_t ns[2], const size_t len[2]) noexcept {
  trial_state &trial = trials[which];
  double per_byte[2];
  for (int prefetched = 0; prefetched < 2; prefetched++) {
    trial.ns[prefetched].fetch_add(ns[prefetched], std::memory_order_relaxed);
    trial.bytes[prefetched].fetch_add(len[prefetched], std::memory_order_relaxed);
    per_byte[prefetched] = static_cast<double>(std::max<uint64_t>(ns[prefetched], 1)) /
                           static_cast<double>(len[prefetched]);
  }
  trial.tasks.fetch_add(1, std::memory_order_relaxed);
  unsigned slot = trial.claimed.fetch_add(1, std::memory_order_relaxed);
  if (slot >= TRIAL_PAIRS)
    return;
  trial.ratios[slot] = per_byte[1] / per_byte[0];
  if (trial.filled.fetch_add(1, std::memory_order_acq_rel) + 1 == TRIAL_PAIRS)
    trial_decide(trial);
}

// The last decision's, while a trial again measures.
extern "C" void staging_trial_result(enum trial_of which, struct staging_trial *out) noexcept {
  const trial_state &trial = trials[which];
  int winner = trial.last.load(std::memory_order_acquire);
  *out = {};
  out->tasks = trial.tasks.load(std::memory_order_relaxed);
  out->pairs = winner < 0 ? std::min(trial.filled.load(std::memory_order_acquire), TRIAL_PAIRS) : TRIAL_PAIRS;
  out->trials = trial.decided.load(std::memory_order_relaxed);
  out->winner = STAGE_MEASURED;
  if (winner < 0)
    return;
  // The loser's bytes at the winner's rate, times how much slower the median pair had the loser.
  bool prefetch_won = winner == STAGE_PREFETCH;
  double won_ns = static_cast<double>(trial.ns[prefetch_won].load());
  double won_bytes = static_cast<double>(trial.bytes[prefetch_won].load());
  double median = trial.median.load(std::memory_order_relaxed);
  double lost_over_won = prefetch_won ? 1 / median : median;
  out->decided = true;
  out->winner = static_cast<staging>(winner);
  out->ratio = median;
  out->prefetch_wins = trial.prefetch_wins.load(std::memory_order_relaxed);
  out->cost_ns = static_cast<double>(trial.bytes[!prefetch_won].load()) * (won_bytes ? won_ns / won_bytes : 0) *
                 (lost_over_won - 1);
}

