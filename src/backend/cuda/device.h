// Device memory and stream handles for the CUDA backend: move-only RAII wrappers over the runtime,
// so kernels and tests never leak on an early return. Errors are cudaError_t; callers wrap them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace tf::backend::cuda {

// Owns one cudaMalloc'd region (plain allocations: managed memory can hang the card).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { allocate(bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  cudaError_t allocate(size_t bytes) {
    reset();
    cudaError_t e = cudaMalloc(&ptr_, bytes);
    bytes_ = e == cudaSuccess ? bytes : 0;
    if (e != cudaSuccess) ptr_ = nullptr;
    return e;
  }
  void reset() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Owns one page-locked host region, which copies to and from the device reach asynchronously.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { reset(); }
  cudaError_t allocate(size_t bytes) {
    reset();
    cudaError_t e = cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault);
    bytes_ = e == cudaSuccess ? bytes : 0;
    if (e != cudaSuccess) ptr_ = nullptr;
    return e;
  }
  void reset() {
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Owns one event without timing (the cheapest kind: it only marks a point of a stream).
class Event {
 public:
  Event() { cudaEventCreateWithFlags(&e_, cudaEventDisableTiming); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Owns one non-blocking stream; the engine thread runs each step on one of these.
class Stream {
 public:
  Stream() { cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }
  cudaError_t sync() const { return cudaStreamSynchronize(s_); }

 private:
  cudaStream_t s_ = nullptr;
};

// Device-wide settings every CUDA program here runs with: the L2 fetches 128 bytes from DRAM per
// miss (not the default 64). The decode matmuls read each weight row 64 bytes per chunk, and with
// this the one-row step ran 5 % faster (gpu_bench's "L2 fetch" probe, docs/benchmarks.md).
inline cudaError_t tune_device() { return cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 128); }

}  // namespace tf::backend::cuda
