# Finds the optional dependencies of each part and decides which parts build.
# A part whose dependency is missing is switched off with one line that names
# the missing piece and how to get it; nothing here is allowed to FATAL_ERROR.
#
# Sets: NOSYNC_HAVE_CLANG, NOSYNC_HAVE_CUDA, NOSYNC_HAVE_CUPTI, NOSYNC_HAVE_TORCH,
#       NOSYNC_HAVE_GTEST and NOSYNC_TORCH_INCLUDE_DIRS (for lint fixtures).

set(NOSYNC_SETUP_HINT "run ./scripts/setup")

# ---------------------------------------------------------------- Clang/LLVM
# Clang's CMake package is version-locked; we try the majors whose clang-tidy
# API we build against, newest first. 19 is the tested one.
set(NOSYNC_HAVE_CLANG OFF)
if(NOSYNC_LINT)
  # LLVM's package looks for optional libraries (LibEdit, zstd, CURL) it does
  # not need here and says so; keep configure output to what matters.
  set(_nosync_saved_log_level "${CMAKE_MESSAGE_LOG_LEVEL}")
  set(CMAKE_MESSAGE_LOG_LEVEL ERROR)
  if(Clang_DIR)
    find_package(Clang CONFIG QUIET)
  else()
    # ClangConfigVersion only accepts an exact major.minor, so search by path.
    foreach(_ver 19 20 18)
      find_package(Clang CONFIG QUIET
        PATHS "/usr/lib/llvm-${_ver}/lib/cmake/clang" "/usr/local/opt/llvm@${_ver}/lib/cmake/clang"
        NO_DEFAULT_PATH)
      if(Clang_FOUND)
        break()
      endif()
    endforeach()
  endif()
  set(CMAKE_MESSAGE_LOG_LEVEL "${_nosync_saved_log_level}")
  if(Clang_FOUND AND EXISTS "${CLANG_INCLUDE_DIRS}/clang-tidy/ClangTidyCheck.h"
     OR Clang_FOUND AND EXISTS "${LLVM_INCLUDE_DIRS}/clang-tidy/ClangTidyCheck.h")
    set(NOSYNC_HAVE_CLANG ON)
  else()
    set(NOSYNC_CLANG_MISSING
      "Clang/LLVM 19 with clang-tidy headers not found (apt-get install clang-19 libclang-19-dev llvm-19-dev clang-tidy-19, or ${NOSYNC_SETUP_HINT})")
  endif()
endif()

# ---------------------------------------------------------------- CUDA + CUPTI
include(CheckLanguage)
set(NOSYNC_HAVE_CUDA OFF)
set(NOSYNC_HAVE_CUPTI OFF)
# -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON configures as if there were none.
if(NOT CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(NOSYNC_HAVE_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # H200/H100 is the machine the numbers are measured on.
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    if(TARGET CUDA::cupti)
      set(NOSYNC_HAVE_CUPTI ON)
    endif()
  endif()
endif()
set(NOSYNC_CUDA_MISSING
  "CUDA toolkit 13 (nvcc + CUPTI) not found: install it under /usr/local/cuda or set CMAKE_CUDA_COMPILER")

# ---------------------------------------------------------------- LibTorch
# The torch wheel ships LibTorch (headers, libs, share/cmake/Torch). We accept
# NOSYNC_TORCH_DIR pointing at that cmake dir, at a prefix, or at a venv root;
# by default the project-local .venv made by scripts/setup.
function(_nosync_find_torch_config out)
  set(_roots ${NOSYNC_TORCH_DIR})
  if(NOT _roots)
    set(_roots "${PROJECT_SOURCE_DIR}/.venv")
  endif()
  foreach(_r ${_roots})
    file(GLOB _cands
      "${_r}/TorchConfig.cmake"
      "${_r}/Torch/TorchConfig.cmake"
      "${_r}/share/cmake/Torch/TorchConfig.cmake"
      "${_r}/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake")
    if(_cands)
      list(GET _cands 0 _c)
      get_filename_component(_d "${_c}" DIRECTORY)
      set(${out} "${_d}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

set(NOSYNC_HAVE_TORCH OFF)
set(NOSYNC_TORCH_INCLUDE_DIRS "")
_nosync_find_torch_config(_torch_cfg_dir)
if(NOT _torch_cfg_dir AND DEFINED Torch_DIR AND EXISTS "${Torch_DIR}/TorchConfig.cmake")
  set(_torch_cfg_dir "${Torch_DIR}")
endif()
if(NOT _torch_cfg_dir)
  set(NOSYNC_TORCH_MISSING
    "LibTorch not found (looked in ${NOSYNC_TORCH_DIR}${PROJECT_SOURCE_DIR}/.venv): ${NOSYNC_SETUP_HINT} or pass -DNOSYNC_TORCH_DIR=<venv or libtorch prefix>")
elseif(NOT NOSYNC_HAVE_CUDA)
  # The PyPI wheel is a CUDA build; its CMake config stops hard without a toolkit.
  set(NOSYNC_TORCH_MISSING "LibTorch found but its CMake package needs the CUDA toolkit: ${NOSYNC_CUDA_MISSING}")
else()
  set(Torch_DIR "${_torch_cfg_dir}" CACHE PATH "LibTorch CMake package" FORCE)
  # Torch's config is chatty about optional pieces (kineto, cuDNN versions);
  # we only care about whether it worked.
  set(_nosync_saved_log_level "${CMAKE_MESSAGE_LOG_LEVEL}")
  set(CMAKE_MESSAGE_LOG_LEVEL ERROR)
  find_package(Torch CONFIG QUIET)
  set(CMAKE_MESSAGE_LOG_LEVEL "${_nosync_saved_log_level}")
  if(Torch_FOUND)
    set(NOSYNC_HAVE_TORCH ON)
    get_filename_component(_torch_root "${_torch_cfg_dir}/../../.." ABSOLUTE)
    set(NOSYNC_TORCH_ROOT "${_torch_root}")
    set(NOSYNC_TORCH_INCLUDE_DIRS "${_torch_root}/include" "${_torch_root}/include/torch/csrc/api/include")
    add_library(nosync_torch INTERFACE)
    target_link_libraries(nosync_torch INTERFACE ${TORCH_LIBRARIES})
    include(NosyncTorchWheel)
    nosync_torch_wheel_link_options(_wheel_link_options "${_torch_root}")
    target_link_options(nosync_torch INTERFACE ${_wheel_link_options})
    add_library(nosync::torch ALIAS nosync_torch)
  else()
    set(NOSYNC_TORCH_MISSING "LibTorch at ${_torch_cfg_dir} failed to configure: rerun with --log-level=STATUS to see why")
  endif()
endif()

# ---------------------------------------------------------------- GoogleTest
find_package(GTest QUIET)
if(GTest_FOUND)
  set(NOSYNC_HAVE_GTEST ON)
else()
  set(NOSYNC_HAVE_GTEST OFF)
endif()

# ---------------------------------------------------------------- parts
# nosync_part(<VAR> <label> <condition-var>... REASON <text>) turns option VAR
# off for this configure when a condition is false, remembering why.
set(NOSYNC_PART_SUMMARY "")
macro(nosync_part var label)
  cmake_parse_arguments(_np "" "" "NEEDS;REASONS" ${ARGN})
  set(_why "")
  if(NOT ${var})
    set(_why "switched off by -D${var}=OFF")
  else()
    set(_i 0)
    foreach(_need ${_np_NEEDS})
      if(NOT ${_need})
        list(GET _np_REASONS ${_i} _why)
        break()
      endif()
      math(EXPR _i "${_i} + 1")
    endforeach()
  endif()
  if(_why)
    set(${var}_ENABLED OFF)
    if(${var})
      message(WARNING "nosync: ${label} is OFF: ${_why}")
    endif()
    list(APPEND NOSYNC_PART_SUMMARY "  ${label}: OFF (${_why})")
  else()
    set(${var}_ENABLED ON)
    list(APPEND NOSYNC_PART_SUMMARY "  ${label}: ON")
  endif()
endmacro()
