// SPDX-License-Identifier: MIT
/*
 * BLAKE3's TBB path, with a grain size.
 *
 * blake3_hasher_update_tbb() splits its input in two at every level of the
 * tree and hands both halves to the join below, down to subtrees of
 * simd_degree chunks (16 KiB with AVX-512): 65,535 parallel_invokes for a
 * 1 GiB file. BLAKE3's own join (c/blake3_tbb.cpp) forks every one of them,
 * and on two cores the forks cost about 5% of the hash: 130.7 ms against
 * 123.1 ms for b3sum (rayon, whose join is cheaper) on a hot 1 GiB file.
 *
 * This file takes the place of blake3_tbb.cpp in libblake3.a: the same
 * symbol and the same parallel_invoke, except that a subtree below the grain
 * is hashed on the thread that holds it. The grain is chosen per call from
 * the length, so that a large file makes a few thousand tasks (plenty to
 * balance the cores) and a single ring block still splits.
 *
 * The grain only decides where work runs, never what is computed: any grain
 * gives the same hash, so callers on different threads may race on it.
 */
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <oneapi/tbb/parallel_invoke.h>

#include "blake3_impl.h"

static_assert(TBB_USE_EXCEPTIONS == 0, "build with C++ exceptions disabled");

namespace {

constexpr size_t MIN_GRAIN = 32 * 1024;	// two AVX-512 leaves: forking less is pure overhead
constexpr size_t TASKS = 2048;		// per call, at most (about)

std::atomic<size_t> grain{MIN_GRAIN};

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
    *l_n = blake3_compress_subtree_wide(l_input, l_input_len, key,
                                        l_chunk_counter, flags, l_cvs, false);
    *r_n = blake3_compress_subtree_wide(r_input, r_input_len, key,
                                        r_chunk_counter, flags, r_cvs, false);
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
}

// blake3_hasher_update_tbb() with the grain for this length.
extern "C" void hash_parallel(blake3_hasher *hasher, const void *data,
                              size_t len) noexcept {
  grain.store(std::max(MIN_GRAIN, len / TASKS), std::memory_order_relaxed);
  blake3_hasher_update_tbb(hasher, data, len);
}
