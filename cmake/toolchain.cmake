# Compiler launchers and linkers that speed up builds when present (ccache, mold), and the CUDA switch.
find_program(TF_CCACHE ccache)
if(TF_CCACHE)
  # base_dir makes cached objects reusable across clones in other folders (CI builds a fresh clone).
  set(tf_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} ${TF_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${tf_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${tf_launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${tf_launcher})
endif()
find_program(TF_MOLD mold)
if(TF_MOLD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_link_options(-fuse-ld=mold)
endif()

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()

# CUDA is optional: AUTO turns it on only where nvcc exists. The backend itself lands with issue F6;
# until then the switch only checks that the toolchain is usable.
set(TF_HAVE_CUDA OFF)
if(NOT TF_CUDA STREQUAL "OFF" AND NOT TF_FUZZ)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(TF_HAVE_CUDA ON)
  elseif(TF_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TF_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "TensorFold: CUDA backend ${TF_HAVE_CUDA}")
