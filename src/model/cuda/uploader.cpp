// Uploader: one staging buffer of 1,024 rows at a time, widened by the CPU backend's dequantizer.
#include "model/cuda/uploader.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "backend/cpu/matmul.h"
#include "base/half.h"

namespace tf::model {

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

Status Uploader::matrix(std::span<const Tensor* const> parts, backend::cuda::DeviceBuffer& dst,
                        const std::function<int64_t(int64_t)>& order) {
  std::vector<std::pair<const Tensor*, int64_t>> stack;  // (tensor, row) of each stacked row
  const int64_t cols = parts.front()->cols();
  for (const Tensor* t : parts) {
    for (int64_t r = 0; r < t->rows(); ++r) stack.emplace_back(t, r);
  }
  const auto rows = static_cast<int64_t>(stack.size());
  TF_CUDA_TRY(
      dst.allocate(std::max<size_t>(static_cast<size_t>(rows * cols) * sizeof(uint16_t), 1)));
  std::vector<float> f32(static_cast<size_t>(cols));
  std::vector<uint16_t> staging;
  constexpr int64_t kChunkRows = 1024;
  for (int64_t r = 0; r < rows; r += kChunkRows) {
    const int64_t n = std::min(kChunkRows, rows - r);
    staging.resize(static_cast<size_t>(n * cols));
    for (int64_t i = 0; i < n; ++i) {
      const auto [t, row] = stack[order ? order(r + i) : r + i];
      backend::cpu::dequantize_row(t->dtype, t->row(row), f32.data(), cols);
      for (int64_t c = 0; c < cols; ++c) staging[i * cols + c] = f32_to_bf16(f32[c]);
    }
    TF_CUDA_TRY(cudaMemcpy(dst.get<uint16_t>() + r * cols, staging.data(),
                           staging.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    progress(static_cast<size_t>(n * cols) * sizeof(uint16_t));
  }
  return {};
}

size_t Uploader::bytes(std::initializer_list<const Tensor*> parts) {
  size_t total = 0;
  for (const Tensor* t : parts) total += static_cast<size_t>(t->rows() * t->cols()) * 2;
  return total;
}

void Uploader::done() const {
  if (show_) std::fprintf(stderr, "\n");
}

void Uploader::progress(size_t bytes) {
  done_ += bytes;
  if (!show_) return;
  const int pct =
      static_cast<int>(100.0 * static_cast<double>(done_) / static_cast<double>(total_));
  if (pct == last_pct_) return;
  last_pct_ = pct;
  std::fprintf(stderr, "\ruploading weights to the GPU: %3d%% (%.2f / %.2f GB)", pct,
               static_cast<double>(done_) / 1e9, static_cast<double>(total_) / 1e9);
}

}  // namespace tf::model
