# Sanitizer and fuzzing flags for every zinf target: ZINF_SANITIZE=address,undefined | thread, and
# ZINF_FUZZ=ON (clang only), which adds ASan+UBSan and libFuzzer's coverage instrumentation.
if(ZINF_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ZINF_FUZZ=ON needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang (see scripts/fuzz)")
  endif()
  if(NOT ZINF_SANITIZE)
    set(ZINF_SANITIZE address,undefined)
  endif()
  # Coverage instrumentation for the libraries; the fuzz executables add -fsanitize=fuzzer (main).
  add_compile_options(-fsanitize=fuzzer-no-link)
  # cpu/matmul*.cpp's AVX2 kernels rely on GCC-only pragmas (push_options/target) and a
  # __builtin_cpu_supports feature clang 14 lacks; no parser calls a kernel, so the fuzz build leaves
  # it out (the fuzz targets link only what the parsers use; the tests and zinf need GCC here).
  set_source_files_properties(${CMAKE_SOURCE_DIR}/cpu/matmul.cpp
                              ${CMAKE_SOURCE_DIR}/cpu/matmul_quant.cpp
                              ${CMAKE_SOURCE_DIR}/cpu/matmul_q4.cpp
                              PROPERTIES HEADER_FILE_ONLY ON)
endif()

if(ZINF_SANITIZE)
  add_compile_options(-fsanitize=${ZINF_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${ZINF_SANITIZE})
  if(ZINF_SANITIZE MATCHES "undefined")
    # Undefined behaviour must fail the test (or the fuzz run), not print a line and go on.
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12's sanitizer instrumentation makes -Wmaybe-uninitialized report a false positive inside
    # <regex> (tests/catch_main.cpp); the ordinary build keeps the warning.
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()
