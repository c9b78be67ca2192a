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
 * is hashed in place from the mapping by default. Reading it once first, one
 * load per cache line (--read-once), or hashing a per-thread copy of it
 * (--stage-copy) were each meant to help the prefetcher follow BLAKE3's wide
 * SIMD loads. In the machine ledger (docs/ledger.md, the hot rows) reading
 * once never beat hashing in place by more than 2%: on the Zen 3 with AVX2
 * (68c61e3153fa, two runs; add026ac3c38) within 1.5% on both cores by median
 * and 3-18% slower on one; on an Emerald Rapids with AVX-512 (c4e6be79eb5a)
 * 17-20% slower on both cores and on one. The Zen 4 race that made read once
 * the rule on AVX-512 was not kept; copying is in no kept run. Both stay as knobs.
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
    staging how = stage_how.load(std::memory_order_relaxed);
    // The halves are adjacent: one subtree of l + r bytes.
    if (use_tbb && l_input_len + r_input_len <= stage_len) {
      if (how == STAGE_READ_ONCE)
        read_once(l_input, l_input_len + r_input_len);
      else if (how == STAGE_COPY && (stage = stage_buffer(stage_len))) {
        memcpy(stage, l_input, l_input_len + r_input_len);
        l_input = stage;
        r_input = stage + l_input_len;
      }
    }
    *l_n = blake3_compress_subtree_wide(l_input, l_input_len, key,
                                        l_chunk_counter, flags, l_cvs, false);
    *r_n = blake3_compress_subtree_wide(r_input, r_input_len, key,
                                        r_chunk_counter, flags, r_cvs, false);
    if (use_tbb)
      release_hashed(input, l_input_len + r_input_len, true);
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

#else
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
