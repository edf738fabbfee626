# The CUDA backend (cuda/) is built whenever nvcc is found (ZINF_CUDA=AUTO), required with ON,
# skipped with OFF. Nothing outside cuda/ includes a CUDA header: cmd/ and the tests include only
# cuda/cuda_backend.h, and a build without nvcc compiles cuda/cuda_unavailable.cpp in its place.
# Sanitizer and fuzz builds leave it out unless ON (no GPU code runs under them, and CI's time is
# better spent elsewhere).
include(CheckLanguage)
set(ZINF_HAVE_CUDA OFF)
set(zinf_cuda_wanted ${ZINF_CUDA})
if(ZINF_CUDA STREQUAL "AUTO" AND (ZINF_SANITIZE OR ZINF_FUZZ))
  set(zinf_cuda_wanted OFF)
endif()
if(NOT zinf_cuda_wanted STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(ZINF_HAVE_CUDA ON)
  elseif(ZINF_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ZINF_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "install the CUDA Toolkit or configure with -DZINF_CUDA=OFF")
  endif()
endif()

if(ZINF_HAVE_CUDA)
  # Ampere (A100) and Hopper (H100/H200, the reference hardware) machine code, plus Hopper PTX
  # that newer GPUs compile at load.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  # C++17: CMake 3.25 (Debian 12) knows no C++20 flag for nvcc; the kernels need nothing newer.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  # fmt and spdlog export /usr/include; passed to nvcc as -isystem it breaks libstdc++'s
  # #include_next <math.h>, so declare it implicit (the host compiler searches it anyway).
  list(APPEND CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
  find_package(CUDAToolkit REQUIRED)
  file(GLOB zinf_cuda_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cuda/*.cu
       ${CMAKE_SOURCE_DIR}/cuda/*.cpp)
  list(REMOVE_ITEM zinf_cuda_sources ${CMAKE_SOURCE_DIR}/cuda/cuda_unavailable.cpp)
  add_library(zinf_cuda STATIC ${zinf_cuda_sources})
  # Executables are linked by the C++ compiler, which gets nvcc's implicit libraries
  # (-lcudadevrt -lcudart_static) but not their directory.
  target_link_directories(zinf_cuda INTERFACE ${CUDAToolkit_LIBRARY_DIR})
  target_link_libraries(zinf_cuda PUBLIC zinf_engine zinf_cpu zinf_cuda_host PRIVATE CUDA::cudart_static CUDA::cublas
                        spdlog::spdlog)
  target_compile_options(zinf_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --expt-relaxed-constexpr>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${ZINF_WERROR}>>:-Werror=all-warnings>)
  message(STATUS "zinf: CUDA backend enabled (${CMAKE_CUDA_COMPILER}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  add_library(zinf_cuda STATIC ${CMAKE_SOURCE_DIR}/cuda/cuda_unavailable.cpp)
  target_link_libraries(zinf_cuda PUBLIC zinf_engine)
  message(STATUS "zinf: CUDA backend not built (ZINF_CUDA=${ZINF_CUDA}); --device cuda will "
                 "explain how to get it")
endif()
target_include_directories(zinf_cuda PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(zinf_cli PUBLIC zinf_cuda)
