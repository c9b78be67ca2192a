// SPDX-License-Identifier: MIT
/*
 * BLAKE3's TBB path, with a grain size and staging through the cache.
 *
 * blake3_hasher_update_tbb() splits its input in two at every level of the
 * tree and hands both halves to the join below, down to subtrees of
 * simd_degree chunks (16 KiB with AVX-512): 65,535 parallel_invokes for a
 * 1 GiB file. BLAKE3's own join (c/blake3_tbb.cpp) forks every one of them,
 * which on two cores cost a few per cent. This file takes the place
 * of blake3_tbb.cpp in libblake3.a: the same symbol and the same
 * parallel_invoke, except that a subtree below the grain is hashed on the
 * thread that holds it. The grain is chosen per call from the length: a few
 * thousand tasks for a large file, and a single ring block still splits.
 *
 * Staging (hash_mapped, for a file hashed straight from the page cache):
 * each serial subtree (a task, up to the stage size: the --stage-size knob)
 * is hashed in place from the mapping, or read once first, one load per
 * cache line (--read-once), or hashed from a per-thread copy (--stage-copy):
 * the last two were meant to help the prefetcher follow BLAKE3's wide SIMD
 * loads. In the machine ledger (docs/ledger.md, the hot rows) reading once
 * never beat hashing in place by more than 1.5%: on the Zen 3 with AVX2
 * (68c61e3153fa, two runs; add026ac3c38) within 1.5% on both cores by median
 * and 3-18% slower on one; on an Emerald Rapids with AVX-512 (c4e6be79eb5a)
 * 17-20% slower on both cores and on one. A Zen 4 race, not kept, had read
 * once ahead. The prefetchers are the CPU's and the ledger has two kinds of
 * CPU, so neither is a rule: unless a staging is given (an option, or a
 * record of wisdom), the two are measured on the first tasks hashed
 * (STAGE_MEASURED, the trial below). Copying is in no kept run: a knob only.
 *
 * Releasing (the same): a mapped file's pages stay in the process's RSS until
 * unmapped, so a file hashed from its mapping peaked at its own size. Each
 * subtree of the release size (--map-release) drops its pages from the
 * mapping (MADV_DONTNEED: the page cache keeps them) once hashed: the peak
 * RSS is a few pieces, not the file. That releasing is no slower than keeping
 * the mapping, and that a window mapped at a time was slower, come from runs
 * that were not kept (docs/cold-path.md's table of what rests on what).
 *
 * The grain and staging only decide where and from what copy the work runs,
 * never what is computed: any setting gives the same hash, so callers on
 * different threads may race on them. A release drops pages only inside the
 * mapping being hashed, and only once they are hashed: a ring block hashed
 * meanwhile on another thread is never touched.
 *
 * Built with -DRINGSUM_BLAKE3_JOIN (build/blake3join/, for `make bench`),
 * the join is left out, the entry points set nothing and BLAKE3's own join
 * is linked: the baseline this file is measured against.
 */
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/task_arena.h>

#include "blake3_impl.h"
#include "parallel_hash.h"

static_assert(TBB_USE_EXCEPTIONS == 0, "build with C++ exceptions disabled");

#ifndef RINGSUM_BLAKE3_JOIN
namespace {

constexpr size_t MIN_GRAIN = 32 * 1024;	// two AVX-512 leaves: forking less is pure overhead
constexpr size_t MAX_GRAIN = 256 * 1024;	// a ring block's subtrees, at most
constexpr size_t TASKS = 2048;		// per ring block, at most (about)
constexpr size_t MAPPED_TASKS = 1024;	// per mapped file: 1 MiB tasks for 1 GiB
constexpr size_t MIN_RELEASE = 64 * 1024;	// whole pages, of any page size Linux has

std::atomic<size_t> grain{MIN_GRAIN};
std::atomic<size_t> stage_bytes{0};	// bytes per staged task; 0: hash in place as it is
std::atomic<staging> stage_how{STAGE_IN_PLACE};	// how a task of at most that size is staged
// Subtrees of this size inside the mapping being hashed are unmapped once
// hashed. Only inside it: a ring block hashed on another thread meanwhile is
// the ring's own memory, which must never be dropped.
std::atomic<size_t> releasing{0};
std::atomic<uintptr_t> mapped_begin{0}, mapped_end{0};

// This thread's stage of at least len bytes, mapped on first use and kept for
// the thread's life; nullptr if it cannot be had (then the subtree is hashed
// in place).
uint8_t *stage_buffer(size_t len) {
  static thread_local uint8_t *stage;
  static thread_local size_t size;
  if (size < len) {
    if (stage)
      munmap(stage, size);
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    stage = p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
    size = stage ? len : 0;
  }
  return stage;
}

// --- the staging trial (STAGE_MEASURED) ---
//
// Each hashing thread alternates in place and read once over its first tasks
// of mapped files, in pairs, the order turned round every other pair (in place
// first, then read once first) so that a drift in speed favours neither. Each
// pair gives read once's time per byte over in place's. Once TRIAL_PAIRS pairs
// are in, from every thread, they decide for the rest of the process: read
// once if it was faster in at least TRIAL_WINS of them (a sign test, one-sided
// at 2.5%) and by at least TRIAL_MARGIN at their median; in place, the ledger's
// winner, otherwise. The pairs are noisy: on a cached 1 GiB file on the Zen 3
// (add026ac3c38, docs/wisdom/staging-trial, 82 executions) the median of 32
// ran 0.96-1.16 and read once won 1 to 22 of them, and the trial took read
// once in 1 execution (the sign test and the median agreed there). A first
// form, 16 pairs and the median alone, took it in 9 of 42 executions of a
// run that was not kept: the sign test and the 32 pairs are a guard that
// kept run does not itself show to be needed.
// The tasks are the file's own, at its grain: nothing is hashed twice and no
// join waits at a chunk's end, so the trial costs what the losing candidate's
// tasks took beyond the winner's rate, and a clock read per task.
constexpr unsigned TRIAL_PAIRS = 32;
constexpr unsigned TRIAL_WINS = 22;
constexpr double TRIAL_MARGIN = 0.99;

struct trial_state {
  std::atomic<int> winner{-1};  // a staging once decided
  std::atomic<unsigned> claimed{0}, filled{0};
  double ratios[TRIAL_PAIRS];
  double median = 0;  // these two written before winner is stored
  unsigned read_once_wins = 0;
  std::atomic<uint64_t> ns[2]{}, bytes[2]{};  // the trial's tasks: [0] in place, [1] read once
  std::atomic<uint64_t> tasks{0};
};
trial_state trial;
thread_local unsigned trial_done;  // this thread's trial tasks so far
thread_local double trial_first;   // the time per byte of its pair's first task

std::atomic<void (*)(staging, size_t)> task_hook{nullptr};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// This thread's next trial task: in place then read once, then read once then in place, ...
staging trial_candidate() {
  bool read_once_first = trial_done / 2 % 2, second = trial_done % 2;
  return read_once_first != second ? STAGE_READ_ONCE : STAGE_IN_PLACE;
}

// The last pair's thread: every ratio is visible through filled's release sequence.
void trial_decide() {
  double sorted[TRIAL_PAIRS];
  std::copy(trial.ratios, trial.ratios + TRIAL_PAIRS, sorted);
  std::sort(sorted, sorted + TRIAL_PAIRS);
  trial.median = (sorted[(TRIAL_PAIRS - 1) / 2] + sorted[TRIAL_PAIRS / 2]) / 2;
  trial.read_once_wins = static_cast<unsigned>(std::lower_bound(sorted, sorted + TRIAL_PAIRS, 1.0) - sorted);
  bool read_once = trial.read_once_wins >= TRIAL_WINS && trial.median < TRIAL_MARGIN;
  trial.winner.store(read_once ? STAGE_READ_ONCE : STAGE_IN_PLACE, std::memory_order_release);
}

void trial_record(staging how, uint64_t ns, size_t len) {
  bool read_once = how == STAGE_READ_ONCE;
  double per_byte = static_cast<double>(std::max<uint64_t>(ns, 1)) / static_cast<double>(len);

  trial.ns[read_once].fetch_add(ns, std::memory_order_relaxed);
  trial.bytes[read_once].fetch_add(len, std::memory_order_relaxed);
  trial.tasks.fetch_add(1, std::memory_order_relaxed);
  if (trial_done++ % 2 == 0) {
    trial_first = per_byte;
    return;
  }
  unsigned slot = trial.claimed.fetch_add(1, std::memory_order_relaxed);
  if (slot >= TRIAL_PAIRS)
    return;
  trial.ratios[slot] = read_once ? per_byte / trial_first : trial_first / per_byte;
  if (trial.filled.fetch_add(1, std::memory_order_acq_rel) + 1 == TRIAL_PAIRS)
    trial_decide();
}

// One load per cache line, in order: the prefetcher follows a single stream,
// and the task is in the cache before BLAKE3's 16 strided streams read it.
void read_once(const uint8_t *input, size_t len) {
  const volatile uint8_t *line = input;
  uint8_t sum = 0;
  for (size_t i = 0; i < len; i += 64)
    sum += line[i];
  (void)sum;
}

void set_grain(size_t len, size_t tasks, size_t max_grain, size_t stage, enum staging how) {
  grain.store(std::clamp(len / tasks, MIN_GRAIN, std::max(max_grain, MIN_GRAIN)),
              std::memory_order_relaxed);
  stage_bytes.store(stage, std::memory_order_relaxed);
  stage_how.store(how, std::memory_order_relaxed);
}

void set_mapping(const void *data, size_t len, size_t release) {
  releasing.store(release, std::memory_order_relaxed);
  mapped_begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_relaxed);
  mapped_end.store(reinterpret_cast<uintptr_t>(data) + len, std::memory_order_release);
}

// A hashed subtree of the release size, or a task (a serial subtree) of at
// least that size, still in the mapping (its pages are the file's): out of
// this process's RSS. Subtrees start at multiples of their power-of-two size
// in a page-aligned mapping, so the range is whole pages.
void release_hashed(const uint8_t *input, size_t len, bool task) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(input);
  if (begin + len > mapped_end.load(std::memory_order_acquire) ||
      begin < mapped_begin.load(std::memory_order_relaxed))
    return;
  size_t release = releasing.load(std::memory_order_relaxed);
  if (release && (len == release || (task && len > release)))
    madvise(const_cast<uint8_t *>(input), len, MADV_DONTNEED);
}

}  // namespace

extern "C" void blake3_compress_subtree_wide_join_tbb(
    // shared params
    const uint32_t key[8], uint8_t flags, bool use_tbb,
    // left-hand side params
    const uint8_t *l_input, size_t l_input_len, uint64_t l_chunk_counter,
    uint8_t *l_cvs, size_t *l_n,
    // right-hand side params
    const uint8_t *r_input, size_t r_input_len, uint64_t r_chunk_counter,
    uint8_t *r_cvs, size_t *r_n) noexcept {
  // The left subtree is the larger: below the grain, so is everything under it.
  if (!use_tbb || l_input_len < grain.load(std::memory_order_relaxed)) {
    uint8_t *stage = nullptr;
    const uint8_t *input = l_input;
    size_t stage_len = stage_bytes.load(std::memory_order_relaxed);
    size_t task_len = l_input_len + r_input_len;  // the halves are adjacent: one subtree
    staging how = stage_how.load(std::memory_order_relaxed);
    bool measuring = false;
    uint64_t start = 0;
    // A task of a mapped file (a ring block has no stage).
    if (use_tbb && task_len <= stage_len) {
      if (how == STAGE_MEASURED) {
        int winner = trial.winner.load(std::memory_order_acquire);
        measuring = winner < 0;
        how = measuring ? trial_candidate() : static_cast<staging>(winner);
      }
      if (measuring)
        start = now_ns();
      if (auto hook = task_hook.load(std::memory_order_relaxed))
        hook(how, task_len);
      if (how == STAGE_READ_ONCE)
        read_once(l_input, task_len);
      else if (how == STAGE_COPY && (stage = stage_buffer(stage_len))) {
        memcpy(stage, l_input, task_len);
        l_input = stage;
        r_input = stage + l_input_len;
      }
    }
    *l_n = blake3_compress_subtree_wide(l_input, l_input_len, key,
                                        l_chunk_counter, flags, l_cvs, false);
    *r_n = blake3_compress_subtree_wide(r_input, r_input_len, key,
                                        r_chunk_counter, flags, r_cvs, false);
    if (measuring)
      trial_record(how, now_ns() - start, task_len);
    if (use_tbb)
      release_hashed(input, task_len, true);
    return;
  }

  oneapi::tbb::parallel_invoke(
      [=]() {
        *l_n = blake3_compress_subtree_wide(
            l_input, l_input_len, key, l_chunk_counter, flags, l_cvs, use_tbb);
      },
      [=]() {
        *r_n = blake3_compress_subtree_wide(
            r_input, r_input_len, key, r_chunk_counter, flags, r_cvs, use_tbb);
      });
  release_hashed(l_input, l_input_len + r_input_len, false);
}

extern "C" void staging_trial_result(struct staging_trial *out) noexcept {
  int winner = trial.winner.load(std::memory_order_acquire);
  *out = {};
  out->tasks = trial.tasks.load(std::memory_order_relaxed);
  out->pairs = std::min(trial.filled.load(std::memory_order_acquire), TRIAL_PAIRS);
  out->winner = STAGE_MEASURED;
  if (winner < 0)
    return;
  // The loser's bytes at the winner's rate, times how much slower the median pair had the loser.
  bool read_once_won = winner == STAGE_READ_ONCE;
  double won_ns = static_cast<double>(trial.ns[read_once_won].load());
  double won_bytes = static_cast<double>(trial.bytes[read_once_won].load());
  double lost_over_won = read_once_won ? 1 / trial.median : trial.median;
  out->decided = true;
  out->winner = static_cast<staging>(winner);
  out->ratio = trial.median;
  out->read_once_wins = trial.read_once_wins;
  out->cost_ns = static_cast<double>(trial.bytes[!read_once_won].load()) * (won_bytes ? won_ns / won_bytes : 0) *
                 (lost_over_won - 1);
}

extern "C" void staging_set_task_hook(void (*hook)(enum staging, size_t)) noexcept {
  task_hook.store(hook, std::memory_order_relaxed);
}

#else
extern "C" void staging_trial_result(struct staging_trial *out) noexcept {
  *out = {};
  out->winner = STAGE_IN_PLACE;  // BLAKE3's join hashes every task in place: no trial
}
extern "C" void staging_set_task_hook(void (*)(enum staging, size_t)) noexcept {}

namespace {
constexpr size_t TASKS = 0, MAX_GRAIN = 0, MAPPED_TASKS = 0, MIN_RELEASE = 0;
void set_grain(size_t, size_t, size_t, size_t, enum staging) {}  // BLAKE3's join has neither grain nor stage
void set_mapping(const void *, size_t, size_t) {}  // nor releases
}  // namespace
#endif  // RINGSUM_BLAKE3_JOIN

// blake3_hasher_update_tbb() with the grain for this length: data already
// in cache (a ring block, just read).
extern "C" void hash_parallel(blake3_hasher *hasher, const void *data,
                              size_t len) noexcept {
  set_grain(len, TASKS, MAX_GRAIN, 0, STAGE_IN_PLACE);
  blake3_hasher_update_tbb(hasher, data, len);
}

// The same for a mapping of the page cache: each serial subtree, of at most
// stage bytes, staged (read once, or copied). Below a power-of-two grain the
// larger half is at most half of it, so every serial subtree fits that
// grain's stage. Every subtree of release bytes is unmapped once hashed.
extern "C" void hash_mapped(blake3_hasher *hasher, const void *data,
                            size_t len, size_t stage, enum staging how,
                            size_t release) noexcept {
  size_t task = std::bit_floor(stage);
  set_grain(len, MAPPED_TASKS, task, task, how);
  set_mapping(data, len, release ? std::bit_floor(std::max(release, MIN_RELEASE)) : 0);
  blake3_hasher_update_tbb(hasher, data, len);
  set_mapping(nullptr, 0, 0);
}

// Each job on a task of its own: whole small files, each too small to split.
extern "C" void hash_jobs_parallel(const struct hash_job *jobs, size_t n) noexcept {
  oneapi::tbb::parallel_for(size_t{0}, n, [jobs](size_t i) {
    blake3_hasher_update(jobs[i].hasher, jobs[i].data, jobs[i].len);
  });
}

// b3sum's --num-threads: at most this many threads hash, for the rest of the run.
extern "C" void hash_limit_threads(size_t threads) noexcept {
  static oneapi::tbb::global_control *limit;
  delete limit;
  limit = new oneapi::tbb::global_control(
      oneapi::tbb::global_control::max_allowed_parallelism, threads);
}

// TBB's arena is as wide as the CPUs this process may run on (its affinity:
// taskset, a cpuset), the global control as --num-threads.
extern "C" size_t hash_max_threads(void) noexcept {
  return std::min(static_cast<size_t>(oneapi::tbb::this_task_arena::max_concurrency()),
                  oneapi::tbb::global_control::active_value(
                      oneapi::tbb::global_control::max_allowed_parallelism));
}
