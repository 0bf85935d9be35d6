# SBX_BUILD_FUZZ: the libFuzzer targets of fuzz/ (clang only). Every target of the build gets
# libFuzzer's coverage instrumentation, so the libraries the fuzzers call are explored, not
# only the harnesses; combine with SBX_ASAN/SBX_UBSAN (scripts/fuzz.sh does).
option(SBX_BUILD_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)
if(SBX_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SBX_BUILD_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
