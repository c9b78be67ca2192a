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
 * is hashed in place from the mapping, or prefetched (--prefetch, below), or
 * read once first, one load per cache line (--read-once), or hashed from a
 * per-thread copy (--stage-copy).
 *
 * Prefetching: BLAKE3 hashes a batch of simd_degree chunks at a time (a leaf
 * of the tree, 16 KiB with AVX-512), one 64-byte block of every chunk per
 * step: 16 streams of 1 KiB, each over before the hardware prefetchers have
 * learnt it, so each step waits on memory. Before a leaf is hashed, the first
 * PREFETCH_LINES lines of every chunk of the next leaf are prefetched; the
 * prefetchers follow each stream from there; the task's pages are mapped
 * first, in one call, since a prefetch of a page not yet mapped is dropped.
 * On the Zen 5 (8f50662391e2, docs/cold-path/prefetch-zen5-run) in place took
 * 1.13-1.16 x the prefetched time on a cached 1 GiB file and read once 1.09-1.14
 * x, on both cores and on one; where the file is cached in 4K folios
 * prefetching gains nothing (0.99-1.00 x in place) and read once 3% does.
 * The lines per chunk are from the same machine. Reading once does not
 * overlap the reading with the hashing: in the ledger (docs/ledger.md, the hot
 * rows) it was at most 4% ahead of in place, and 17-20% behind on the Emerald
 * Rapids (c4e6be79eb5a). The prefetchers are the CPU's, and the Zen 5 is the
 * only CPU prefetching has met so far, so it is no rule: unless a staging is
 * given (an option, or a record of wisdom), in place and prefetched are
 * measured on the first tasks hashed (STAGE_MEASURED, the trial below).
 * Reading once and copying are knobs only.
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
constexpr uintptr_t MIN_PAGE = 4096;	// a mapping's pages are at least this, and aligned to it

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
// The first tasks of mapped files are each a pair: one half hashed in place,
// the other prefetched, each timed, the order turned round every other task
// (in place first, then prefetched first) so that a drift in speed favours
// neither. Each pair gives prefetched time per byte over in place's. Once
// TRIAL_PAIRS pairs are in, from every thread, they decide for the rest of the
// process: prefetched if it was faster in at least TRIAL_WINS of them (a sign
// test, one-sided at 2.5%) and by at least TRIAL_MARGIN at their median; in
// place otherwise. A pair is two halves of one task, not two tasks in turn:
// on the Zen 5 a cached file's 1 MiB tasks took 112-135 us or 220-250 us by
// where in the file they lay (the same for both candidates: the page cache's
// folios there, not the hashing), so a pair of neighbouring tasks often
// straddled the two and was noise; the trial of whole tasks found prefetching
// faster in only 19-24 of 32 pairs at a median of 0.86-0.90, and kept in place
// in 12 of 20 executions (by hand: prefetch-zen5-run's README). The pairs
// were noisy before too: when the trial was of reading once, on a cached
// 1 GiB file on the Zen 3 (add026ac3c38, docs/wisdom/staging-trial, 82
// executions), their median ran 0.96-1.16. The tasks are the file's own, at
// its grain: nothing is hashed twice and no join waits at a chunk's end, so
// the trial costs what the losing candidate's halves took beyond the winner's
// rate, and three clock reads per task.
constexpr unsigned TRIAL_PAIRS = 32;
constexpr unsigned TRIAL_WINS = 22;
constexpr double TRIAL_MARGIN = 0.99;

struct trial_state {
  std::atomic<int> winner{-1};  // a staging once decided
  std::atomic<unsigned> claimed{0}, filled{0};
  double ratios[TRIAL_PAIRS];
  double median = 0;  // these two written before winner is stored
  unsigned prefetch_wins = 0;
  std::atomic<uint64_t> ns[2]{}, bytes[2]{};  // the trial's tasks: [0] in place, [1] prefetched
  std::atomic<uint64_t> tasks{0};
};
trial_state trial;
thread_local unsigned trial_done;  // this thread's trial tasks so far

std::atomic<void (*)(staging, size_t)> task_hook{nullptr};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}


// The last pair's thread: every ratio is visible through filled's release sequence.
void trial_decide() {
  double sorted[TRIAL_PAIRS];
  std::copy(trial.ratios, trial.ratios + TRIAL_PAIRS, sorted);
  std::sort(sorted, sorted + TRIAL_PAIRS);
  trial.median = (sorted[(TRIAL_PAIRS - 1) / 2] + sorted[TRIAL_PAIRS / 2]) / 2;
  trial.prefetch_wins = static_cast<unsigned>(std::lower_bound(sorted, sorted + TRIAL_PAIRS, 1.0) - sorted);
  bool prefetch = trial.prefetch_wins >= TRIAL_WINS && trial.median < TRIAL_MARGIN;
  trial.winner.store(prefetch ? STAGE_PREFETCH : STAGE_IN_PLACE, std::memory_order_release);
}

// A trial task's pair: [0] its half hashed in place, [1] its half prefetched.
void trial_record(const uint64_t ns[2], const size_t len[2]) {
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
    trial_decide();
}

// --- prefetching (STAGE_PREFETCH) ---
constexpr size_t PREFETCH_LINES = 2;	// per chunk: 1 and 3 were slower on the Zen 5 (the file's head)
constexpr size_t LINE = 64;
thread_local bool prefetching;	// this thread's task is prefetched: its leaves see it

// The first lines of each chunk of a leaf, into every level of the cache. A
// prefetch never faults: past the task's end, or the mapping's, it costs one
// line of bandwidth at most.
void prefetch_chunk_heads(const uint8_t *leaf, size_t len) {
  for (size_t chunk = 0; chunk < len; chunk += BLAKE3_CHUNK_LEN)
    for (size_t line = 0; line < PREFETCH_LINES; line++)
      __builtin_prefetch(leaf + chunk + line * LINE, 0, 3);
}

size_t leaf_len() { return blake3_simd_degree() * BLAKE3_CHUNK_LEN; }

// A file cached in 4K folios is mapped 64 KiB a fault: prefetching there cost
// 4-5% over in place until the task's pages were mapped first, in one call (a
// call per half still cost 4%; the Zen 5, prefetch-zen5-run). Where the
// folios are PMD-sized the call finds them mapped.
void map_pages(const uint8_t *input, size_t len) {
  uintptr_t page = reinterpret_cast<uintptr_t>(input) & ~(MIN_PAGE - 1);
  // Errors are left to the hashing: a page gone past a truncation faults there (SIGBUS, input.c).
  madvise(reinterpret_cast<void *>(page), reinterpret_cast<uintptr_t>(input) + len - page, MADV_POPULATE_READ);
}

// A half of a task, staged in place or prefetched (mapped: its pages are, by
// the caller): its leaves, hashed below, each prefetch the next (the join's
// serial branch) once the first is.
size_t hash_half(const uint8_t *input, size_t len, const uint32_t key[8], uint64_t chunk_counter, uint8_t flags,
                 uint8_t *cvs, staging how, bool mapped) {
  if (auto hook = task_hook.load(std::memory_order_relaxed))
    hook(how, len);
  prefetching = how == STAGE_PREFETCH;
  if (prefetching) {
    if (!mapped)
      map_pages(input, len);
    prefetch_chunk_heads(input, std::min(len, leaf_len()));
  }
  return blake3_compress_subtree_wide(input, len, key, chunk_counter, flags, cvs, false);
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
    size_t stage_len = stage_bytes.load(std::memory_order_relaxed);
    size_t task_len = l_input_len + r_input_len;  // the halves are adjacent: one subtree
    staging how = stage_how.load(std::memory_order_relaxed);
    // A task of a mapped file (a ring block has no stage).
    if (use_tbb && task_len <= stage_len) {
      const uint8_t *input = l_input;
      int winner = how == STAGE_MEASURED ? trial.winner.load(std::memory_order_acquire) : how;
      if (winner < 0) {  // a trial task: a half each, the order turned round every other task
        bool prefetch_first = trial_done++ % 2;
        staging first = prefetch_first ? STAGE_PREFETCH : STAGE_IN_PLACE;
        staging second = prefetch_first ? STAGE_IN_PLACE : STAGE_PREFETCH;
        uint64_t ns[2], start = now_ns();
        size_t len[2];
        *l_n = hash_half(l_input, l_input_len, key, l_chunk_counter, flags, l_cvs, first, false);
        uint64_t middle = now_ns();
        *r_n = hash_half(r_input, r_input_len, key, r_chunk_counter, flags, r_cvs, second, false);
        ns[prefetch_first] = middle - start, len[prefetch_first] = l_input_len;
        ns[!prefetch_first] = now_ns() - middle, len[!prefetch_first] = r_input_len;
        trial_record(ns, len);
      } else if (winner == STAGE_IN_PLACE || winner == STAGE_PREFETCH) {
        if (winner == STAGE_PREFETCH)  // the whole task in one call
          map_pages(l_input, task_len);
        *l_n = hash_half(l_input, l_input_len, key, l_chunk_counter, flags, l_cvs, static_cast<staging>(winner), true);
        *r_n = hash_half(r_input, r_input_len, key, r_chunk_counter, flags, r_cvs, static_cast<staging>(winner), true);
      } else {
        uint8_t *stage = nullptr;
        if (auto hook = task_hook.load(std::memory_order_relaxed))
          hook(how, task_len);
        if (how == STAGE_READ_ONCE)
          read_once(l_input, task_len);
        else if (how == STAGE_COPY && (stage = stage_buffer(stage_len))) {
          memcpy(stage, l_input, task_len);
          l_input = stage;
          r_input = stage + l_input_len;
        }
        *l_n = blake3_compress_subtree_wide(l_input, l_input_len, key, l_chunk_counter, flags, l_cvs, false);
        *r_n = blake3_compress_subtree_wide(r_input, r_input_len, key, r_chunk_counter, flags, r_cvs, false);
      }
      prefetching = false;  // the task's end: a ring block, or another task, is not prefetched
      release_hashed(input, task_len, true);
      return;
    }
    // Two leaves of a prefetched task, hashed below without coming back here: each prefetches the next.
    bool leaves = prefetching && l_input_len <= leaf_len();
    if (leaves)
      prefetch_chunk_heads(r_input, leaf_len());
    *l_n = blake3_compress_subtree_wide(l_input, l_input_len, key,
                                        l_chunk_counter, flags, l_cvs, false);
    if (leaves)
      prefetch_chunk_heads(r_input + r_input_len, leaf_len());
    *r_n = blake3_compress_subtree_wide(r_input, r_input_len, key,
                                        r_chunk_counter, flags, r_cvs, false);
    if (use_tbb)
      release_hashed(l_input, task_len, true);
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
  bool prefetch_won = winner == STAGE_PREFETCH;
  double won_ns = static_cast<double>(trial.ns[prefetch_won].load());
  double won_bytes = static_cast<double>(trial.bytes[prefetch_won].load());
  double lost_over_won = prefetch_won ? 1 / trial.median : trial.median;
  out->decided = true;
  out->winner = static_cast<staging>(winner);
  out->ratio = trial.median;
  out->prefetch_wins = trial.prefetch_wins;
  out->cost_ns = static_cast<double>(trial.bytes[!prefetch_won].load()) * (won_bytes ? won_ns / won_bytes : 0) *
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
