# The CUDA backend (issue F6): kernels in src/backend/cuda, gpu_test and gpu_bench. Built only when
# cmake/toolchain.cmake found nvcc (TF_HAVE_CUDA); CI compiles it, only the H200 machine runs it.
if(NOT TF_HAVE_CUDA)
  return()
endif()
# Hopper machine code (sm_90a: wgmma, setmaxnreg) plus compute_90 PTX for any later chip.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "90a-real;90-virtual")
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
add_subdirectory(${PROJECT_SOURCE_DIR}/src/backend/cuda ${PROJECT_BINARY_DIR}/backend_cuda)
