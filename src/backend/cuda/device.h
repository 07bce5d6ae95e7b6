// Device memory and stream handles for the CUDA backend: move-only RAII wrappers over the runtime,
// so kernels and tests never leak on an early return. Errors are cudaError_t; callers wrap them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace tf::backend::cuda {

namespace detail {
inline cudaError_t device_alloc(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
inline cudaError_t device_free(void* p) { return cudaFree(p); }
inline cudaError_t pinned_alloc(void** p, size_t bytes) {
  return cudaHostAlloc(p, bytes, cudaHostAllocDefault);
}
inline cudaError_t pinned_free(void* p) { return cudaFreeHost(p); }
}  // namespace detail

// Owns one region from Alloc, given back with Free.
template <cudaError_t (*Alloc)(void**, size_t), cudaError_t (*Free)(void*)>
class OwnedRegion {
 public:
  OwnedRegion() = default;
  explicit OwnedRegion(size_t bytes) { allocate(bytes); }
  OwnedRegion(const OwnedRegion&) = delete;
  OwnedRegion& operator=(const OwnedRegion&) = delete;
  OwnedRegion(OwnedRegion&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedRegion& operator=(OwnedRegion&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~OwnedRegion() { reset(); }

  cudaError_t allocate(size_t bytes) {
    reset();
    cudaError_t e = Alloc(&ptr_, bytes);
    bytes_ = e == cudaSuccess ? bytes : 0;
    if (e != cudaSuccess) ptr_ = nullptr;
    return e;
  }
  void reset() {
    if (ptr_) Free(ptr_);
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

// Device memory (plain cudaMalloc: managed memory can hang the card).
using DeviceBuffer = OwnedRegion<detail::device_alloc, detail::device_free>;
// Page-locked host memory, which copies to and from the device reach asynchronously.
using PinnedBuffer = OwnedRegion<detail::pinned_alloc, detail::pinned_free>;

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
