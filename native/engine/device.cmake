# CUDA device buffers in the engine (src/device_backend.*, src/nccl_loader.*, src/cuda_loader.*):
#   PERSEUS_ENGINE_DEVICE=ON  the device backend, compiled against nccl.h from PyPI's nvidia-nccl-cu12 wheel
#                             (recipes/nccl/fetch.sh, cached in .cache/nccl; PERSEUS_NCCL_SITE names its
#                             folder, or is left empty to run the recipe) and the CUDA runtime headers of a
#                             toolkit. libnccl.so.2 and libcudart are loaded at run time (dlopen), never
#                             linked: the library still needs only libc.
#   PERSEUS_ENGINE_CUDA=ON    as above, against the provisioned CUDA 12.4 toolkit (aiacc-build toolkit fetch
#                             12.4), with the core's kernels compiled by its nvcc: the configuration CI compiles.
# OFF (default; the framework bindings' builds): the device entry points fail saying how to get them.
option(PERSEUS_ENGINE_DEVICE "engine: CUDA device buffers (NCCL loaded at run time, or Gloo with host staging)" OFF)
option(PERSEUS_ENGINE_CUDA "engine: device buffers and the core's kernels built with the CUDA 12.4 toolkit" OFF)
set(PERSEUS_NCCL_SITE "" CACHE PATH "folder of recipes/nccl/fetch.sh (nvidia/nccl/include/nccl.h); empty: run it")

if(PERSEUS_ENGINE_CUDA)
  set(PERSEUS_ENGINE_DEVICE ON)
  get_target_property(_core_sources perseus_core SOURCES)
  if(NOT "${_core_sources}" MATCHES "kernels\\.cu")
    message(FATAL_ERROR "PERSEUS_ENGINE_CUDA=ON needs the core's CUDA kernels: configure with -DPERSEUS_WITH_CUDA=ON "
                        "-DCMAKE_CUDA_COMPILER=<toolkit>/bin/nvcc (aiacc-build toolkit fetch 12.4 provisions one)")
  endif()
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE _nvcc_version)
  if(NOT _nvcc_version MATCHES "release 12\\.4")
    message(FATAL_ERROR "PERSEUS_ENGINE_CUDA=ON is the CUDA 12.4 build, but ${CMAKE_CUDA_COMPILER} is not nvcc 12.4: "
                        "run `aiacc-build toolkit fetch 12.4` and pass -DCMAKE_CUDA_COMPILER=<its folder>/bin/nvcc")
  endif()
  get_filename_component(_toolkit "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(_toolkit "${_toolkit}" DIRECTORY)
  set(PERSEUS_CUDA_RUNTIME_INCLUDE "${_toolkit}/include")
endif()

if(NOT PERSEUS_ENGINE_DEVICE)
  target_sources(perseus_engine_impl PRIVATE src/c_api_device_off.cc)
  message(STATUS "perseus engine: no device buffers (-DPERSEUS_ENGINE_DEVICE=ON adds them)")
  return()
endif()

if(NOT PERSEUS_NCCL_SITE)
  message(STATUS "perseus engine: fetching NCCL's headers with recipes/nccl/fetch.sh (cached in .cache/nccl)")
  execute_process(COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/../../recipes/nccl/fetch.sh
                  OUTPUT_VARIABLE _nccl_site OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _nccl_rc)
  if(NOT _nccl_rc EQUAL 0)
    message(FATAL_ERROR "recipes/nccl/fetch.sh failed (see above); or configure with -DPERSEUS_ENGINE_DEVICE=OFF")
  endif()
  set(PERSEUS_NCCL_SITE "${_nccl_site}" CACHE PATH "folder of recipes/nccl/fetch.sh" FORCE)
endif()
if(NOT EXISTS "${PERSEUS_NCCL_SITE}/nvidia/nccl/include/nccl.h")
  message(FATAL_ERROR "no ${PERSEUS_NCCL_SITE}/nvidia/nccl/include/nccl.h: run bash recipes/nccl/fetch.sh and pass "
                      "the folder it prints as -DPERSEUS_NCCL_SITE")
endif()
if(NOT PERSEUS_CUDA_RUNTIME_INCLUDE)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR "PERSEUS_ENGINE_DEVICE=ON needs the CUDA runtime headers (cuda_runtime_api.h): run "
                        "`aiacc-build toolkit fetch 12.4` and pass -DCUDAToolkit_ROOT=<its folder>")
  endif()
  set(PERSEUS_CUDA_RUNTIME_INCLUDE "${CUDAToolkit_INCLUDE_DIRS}")
endif()
target_sources(perseus_engine_impl PRIVATE
  src/dl_search.cc src/cuda_loader.cc src/nccl_loader.cc src/device_backend.cc src/engine_device.cc
  src/c_api_device.cc)
# headers only: nothing of CUDA or NCCL is linked
target_include_directories(perseus_engine_impl SYSTEM PUBLIC
  "${PERSEUS_NCCL_SITE}/nvidia/nccl/include" ${PERSEUS_CUDA_RUNTIME_INCLUDE})
message(STATUS "perseus engine: device buffers (nccl.h of ${PERSEUS_NCCL_SITE}, CUDA headers ${PERSEUS_CUDA_RUNTIME_INCLUDE})")
