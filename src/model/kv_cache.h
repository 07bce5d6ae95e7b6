// Paged KV storage: a pool of fixed-size blocks, each holding `block_size` positions of K and V for
// every layer. Sequences address it through block tables (position p lives in block
// table[p / block_size], slot p % block_size). Allocation and sharing are the engine's job.
#pragma once

#include <algorithm>
#include <cstdint>
#include <new>
#include <span>
#include <vector>

#include "checkpoint/model_config.h"
#include "hwy/aligned_allocator.h"

namespace tf::model {

class KvCache {
 public:
  static constexpr int kDefaultBlockSize = 16;

  // host_storage false: the blocks' storage is a device's (the model's own pool), and this holds
  // the pool's shape only; k() and v() must not be called.
  KvCache(const checkpoint::ModelConfig& config, int64_t num_blocks,
          int block_size = kDefaultBlockSize, bool host_storage = true)
      : layers_(config.num_layers),
        row_(static_cast<int64_t>(config.num_kv_heads) * config.head_dim),
        block_size_(block_size),
        num_blocks_(num_blocks),
        // Left uninitialized: pages are touched only when a block is first written, so a large
        // pool costs nothing until it is used.
        k_(host_storage ? allocate(num_blocks * layers_ * block_size * row_) : nullptr),
        v_(host_storage ? allocate(num_blocks * layers_ * block_size * row_) : nullptr) {}

  // Bytes one block takes (K and V, all layers) at `element_bytes` an element
  // (Model::kv_element_bytes), for sizing a pool from a memory budget.
  static int64_t block_bytes(const checkpoint::ModelConfig& config,
                             int block_size = kDefaultBlockSize,
                             int element_bytes = sizeof(float)) {
    return 2 * int64_t{config.num_layers} * block_size * config.num_kv_heads * config.head_dim *
           element_bytes;
  }

  bool host_storage() const { return k_ != nullptr; }
  int block_size() const { return block_size_; }
  int num_layers() const { return static_cast<int>(layers_); }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t row_size() const { return row_; }
  // Rows of one block for one layer: block_size rows of row_size() floats.
  float* k(int64_t block, int layer) { return k_.get() + (block * layers_ + layer) * block_size_ * row_; }
  float* v(int64_t block, int layer) { return v_.get() + (block * layers_ + layer) * block_size_ * row_; }
  const float* k(int64_t block, int layer) const {
    return k_.get() + (block * layers_ + layer) * block_size_ * row_;
  }
  const float* v(int64_t block, int layer) const {
    return v_.get() + (block * layers_ + layer) * block_size_ * row_;
  }

 private:
  int64_t layers_, row_;
  int block_size_;
  int64_t num_blocks_;
  // Highway's aligned allocation (64 bytes or more): the attention kernels read rows as 32-byte
  // vectors, and a pool that starts 16 bytes into a line (as a large malloc does) splits every
  // other one across two lines (a fifth of attention's time).
  static hwy::AlignedFreeUniquePtr<float[]> allocate(int64_t floats) {
    auto p = hwy::AllocateAligned<float>(std::max<size_t>(static_cast<size_t>(floats), 1));
    if (!p) throw std::bad_alloc();  // as new float[] did
    return p;
  }
  hwy::AlignedFreeUniquePtr<float[]> k_, v_;
};

// A contiguous block table 0..n-1, for callers that own a whole pool for one sequence.
inline std::vector<int32_t> identity_table(int64_t num_blocks) {
  std::vector<int32_t> t(static_cast<size_t>(num_blocks));
  for (int64_t i = 0; i < num_blocks; ++i) t[i] = static_cast<int32_t>(i);
  return t;
}

}  // namespace tf::model
