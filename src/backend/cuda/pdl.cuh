// Programmatic dependent launch for the one-row step's short links: a kernel launched with
// launch_early() may start while its predecessor on the stream still runs (once every block of
// the predecessor has called pdl_release() or exited), does what does not depend on it, and
// pdl_wait()s for the predecessor's completion and memory before reading its output.
#pragma once

#include <cuda_runtime.h>

namespace tf::backend::cuda {

// Lets the stream's next kernel start, where it was launched early (otherwise no effect).
__device__ __forceinline__ void pdl_release() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
// Waits for the predecessor grid's completion (returns at once where launched normally).
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

inline cudaLaunchAttribute launch_early() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

// kernel<<<grid, block, smem, s>>>(args...), launched early where `early`; returns its error, or
// else an earlier launch's still pending (as cudaGetLastError after <<<>>> would).
template <typename... Params, typename... Args>
cudaError_t launch_maybe_early(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                               cudaStream_t s, bool early, Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr = launch_early();
  cfg.attrs = &attr;
  cfg.numAttrs = early ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
  return e != cudaSuccess ? e : cudaGetLastError();
}

}  // namespace tf::backend::cuda
