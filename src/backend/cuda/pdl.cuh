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

}  // namespace tf::backend::cuda
