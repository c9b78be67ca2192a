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
 * The lines per chunk (PREFETCH_LINES) are from the same machine. Reading once does not
 * overlap the reading with the hashing: in the ledger (docs/ledger.md, the hot
 * rows) it was at most 4% ahead of in place, and 17-20% behind on the Emerald
 * Rapids (c4e6be79eb5a). The prefetchers are the CPU's, and the Zen 5 is the
 * only CPU prefetching has met so far, so it is no rule: unless a staging is
 * given (an option, or a record of wisdom), in place and prefetched are
 * measured on the first tasks hashed (STAGE_MEASURED, the trial below).
 * Reading once and copying are knobs only. The ring's blocks are hashed in
 * place or prefetched too, with a trial of their own (hash_ring): on the
 * Zen 5's RAM device prefetching took 0.88-0.95 of in place's time
 * (docs/cold-path/prefetch-ring-zen5-run).
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
#include "staging_trial.h"

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

std::atomic<void (*)(staging, size_t)> task_hook{nullptr};

// --- prefetching (STAGE_PREFETCH) ---
// Per chunk. On the Zen 5 (docs/cold-path/prefetch-zen5-run/lines-race.log, 1-4 lines, 1 and 2 cores,
// AVX-512 and AVX2, two page-cache shapes) 3 lines were the fastest in all 8 races: 2 took 1.017-1.028 x
// their time with AVX-512 and 1.07-1.08 x with AVX2, 4 took 1.006-1.022 and 1.02-1.03 x.
constexpr size_t PREFETCH_LINES = 3;
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

// A half of a task, staged in place or prefetched (mapped: a mapped file's,
// its pages mapped first unless the caller did; a ring block's are the ring's
// own): its leaves, hashed below, each prefetch the next (the join's serial
// branch) once the first is.
size_t hash_half(const uint8_t *input, size_t len, const uint32_t key[8], uint64_t chunk_counter, uint8_t flags,
                 uint8_t *cvs, staging how, bool mapped, bool map) {
  auto hook = task_hook.load(std::memory_order_relaxed);
  if (hook && mapped)
    hook(how, len);
  prefetching = how == STAGE_PREFETCH;
  if (prefetching) {
    if (map)
      map_pages(input, len);
    prefetch_chunk_heads(input, std::min(len, leaf_len()));
    if (len <= leaf_len())  // a half of one leaf has no leaves below to prefetch the next: it does
      prefetch_chunk_heads(input + len, leaf_len());
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
    // A task of a mapped file, or of a ring block (it has no stage).
    bool mapped = use_tbb && task_len <= stage_len, ring = use_tbb && !stage_len;
    if (mapped || ring) {
      const uint8_t *input = l_input;
      // a ring block's staging is never measured here: hash_ring() gives each block's half its own
      int winner = how == STAGE_MEASURED ? trial_task_winner(TRIAL_MAPPED) : how;
      if (winner < 0) {  // a trial task: a half each
        trial_pair(TRIAL_MAPPED, l_input_len, r_input_len, [&](int half, staging candidate) {
          if (half == 0)
            *l_n = hash_half(l_input, l_input_len, key, l_chunk_counter, flags, l_cvs, candidate, true, true);
          else
            *r_n = hash_half(r_input, r_input_len, key, r_chunk_counter, flags, r_cvs, candidate, true, true);
        });
      } else if (winner == STAGE_IN_PLACE || winner == STAGE_PREFETCH) {
        if (mapped && winner == STAGE_PREFETCH)  // the whole task in one call
          map_pages(l_input, task_len);
        *l_n = hash_half(l_input, l_input_len, key, l_chunk_counter, flags, l_cvs, static_cast<staging>(winner),
                         mapped, false);
        *r_n = hash_half(r_input, r_input_len, key, r_chunk_counter, flags, r_cvs, static_cast<staging>(winner),
                         mapped, false);
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

extern "C" void staging_set_task_hook(void (*hook)(enum staging, size_t)) noexcept {
  task_hook.store(hook, std::memory_order_relaxed);
}

// A ring block, or a piece of one, on every core (its tasks staged by the
// grain's how) or on this thread.
void ring_update(blake3_hasher *hasher, const uint8_t *data, size_t len, staging how, bool parallel) {
  if (auto hook = task_hook.load(std::memory_order_relaxed))
    hook(how, len);
  if (parallel) {
    set_grain(len, TASKS, MAX_GRAIN, 0, how);
    blake3_hasher_update_tbb(hasher, data, len);
  } else {
    prefetching = how == STAGE_PREFETCH;
    blake3_hasher_update(hasher, data, len);
    prefetching = false;
  }
}

// The ring's trial: while it runs, each block (or piece) is a pair, its first
// half hashed with one candidate and its second with the other, the order
// turned round every other pair, as a mapped file's tasks are. A block's
// tasks are too small for that (32 KiB: one leaf a half, with nothing ahead
// to prefetch), and its halves have just been read alike, so the pair is the
// block's. A piece too small to halve is hashed in place.
constexpr size_t MIN_RING_PAIR = HASH_TRIAL_MIN;  // parallel_load.c hashes a smaller one in place without loading this

void hash_ring(blake3_hasher *hasher, const uint8_t *data, size_t len, staging how, bool parallel) {
  int winner = how == STAGE_MEASURED ? trial_task_winner(TRIAL_RING) : how;
  if (winner >= 0 || len < MIN_RING_PAIR) {
    ring_update(hasher, data, len, winner >= 0 ? static_cast<staging>(winner) : STAGE_IN_PLACE, parallel);
    return;
  }
  size_t first = len / 2 / BLAKE3_CHUNK_LEN * BLAKE3_CHUNK_LEN;  // whole chunks: any split hashes alike
  trial_pair(TRIAL_RING, first, len - first, [&](int half, staging candidate) {
    ring_update(hasher, data + (half ? first : 0), half ? len - first : first, candidate, parallel);
  });
}

#else
extern "C" void staging_trial_result(enum trial_of, struct staging_trial *out) noexcept {
  *out = {};
  out->winner = STAGE_IN_PLACE;  // BLAKE3's join hashes every task in place: no trial
}
extern "C" void staging_set_task_hook(void (*)(enum staging, size_t)) noexcept {}

namespace {
constexpr size_t TASKS = 0, MAX_GRAIN = 0, MAPPED_TASKS = 0, MIN_RELEASE = 0;
void set_grain(size_t, size_t, size_t, size_t, enum staging) {}  // BLAKE3's join has neither grain nor stage
void set_mapping(const void *, size_t, size_t) {}  // nor releases
void hash_ring(blake3_hasher *hasher, const uint8_t *data, size_t len, staging, bool parallel) {
  if (parallel)
    blake3_hasher_update_tbb(hasher, data, len);
  else
    blake3_hasher_update(hasher, data, len);
}
}  // namespace
#endif  // RINGSUM_BLAKE3_JOIN

// blake3_hasher_update_tbb() with the grain for this length: a ring block,
// just read, each task staged as how says (in place, prefetched, or measured).
extern "C" void hash_parallel(blake3_hasher *hasher, const void *data,
                              size_t len, enum staging how) noexcept {
  hash_ring(hasher, static_cast<const uint8_t *>(data), len, how, true);
}

extern "C" void hash_serial(blake3_hasher *hasher, const void *data, size_t len, enum staging how) noexcept {
  hash_ring(hasher, static_cast<const uint8_t *>(data), len, how, false);
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

// b3sum's --num-threads: at most this many threads hash, for the rest of the run.
extern "C" void hash_limit_threads(size_t threads) noexcept {
  static oneapi::tbb::global_control *limit;
  delete limit;
  limit = new oneapi::tbb::global_control(
      oneapi::tbb::global_control::max_allowed_parallelism, threads);
}

