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

# The GPU decoder (model/cuda/) joins tf_model, which then runs on either backend.
file(GLOB model_cuda_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/model/cuda/*.cpp)
target_sources(tf_model PRIVATE ${model_cuda_srcs})
target_link_libraries(tf_model PUBLIC tf_backend_cuda)
target_compile_definitions(tf_model PUBLIC TF_HAVE_CUDA=1)

# GPU model tests: compiled with the rest, run only on the H200 (never registered with ctest).
if(TF_BUILD_TESTS)
  add_executable(cuda_model_test ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_model_test.cpp
                 ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_moe_test.cpp
                 ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_mask_test.cpp
                 ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_kv_tiers_test.cpp
                 ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_draft_test.cpp
                 ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_shard_test.cpp)
  target_link_libraries(cuda_model_test PRIVATE tf_engine GTest::gtest_main)
  target_compile_definitions(cuda_model_test PRIVATE TF_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_include_directories(cuda_model_test PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  set_target_properties(cuda_model_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/gpu)
endif()
