// Getting a loaded checkpoint's host tensors onto the GPU: any dtype widened on the host and copied
// as bf16 (or f32 vectors as they are), with a progress line for big models.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "backend/cuda/device.h"
#include "base/result.h"
#include "model/cuda/cuda_status.h"
#include "tensor/tensor.h"

namespace tf::model {

// dst = the vector's bytes (at least one byte allocated).
template <typename T>
Status upload(backend::cuda::DeviceBuffer& dst, const std::vector<T>& host) {
  TF_CUDA_TRY(dst.allocate(std::max<size_t>(host.size() * sizeof(T), 1)));
  TF_CUDA_TRY(cudaMemcpy(dst.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return {};
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v);

// Weight upload with a progress line on stderr: matrices are widened row by row on the host (any
// checkpoint dtype) and copied as bf16, concatenating the parts of fused projections.
class Uploader {
 public:
  // The progress line only for uploads that take a while (tests load tiny fixtures).
  explicit Uploader(size_t total_bytes)
      : total_(total_bytes), show_(total_bytes > (size_t{256} << 20)) {}

  // dst = the parts' rows one after another; with `order`, dst row r is that stack's row
  // order(r) (a permutation of it).
  Status matrix(std::span<const Tensor* const> parts, backend::cuda::DeviceBuffer& dst,
                const std::function<int64_t(int64_t)>& order = {});
  Status matrix(std::initializer_list<const Tensor*> parts, backend::cuda::DeviceBuffer& dst,
                const std::function<int64_t(int64_t)>& order = {}) {
    return matrix(std::span<const Tensor* const>(parts.begin(), parts.size()), dst, order);
  }
  // Ends the progress line.
  void done() const;

  // The bf16 bytes of these matrices (for the total).
  static size_t bytes(std::initializer_list<const Tensor*> parts);

 private:
  void progress(size_t bytes);
  size_t total_, done_ = 0;
  bool show_;
  int last_pct_ = -1;
};

}  // namespace tf::model
