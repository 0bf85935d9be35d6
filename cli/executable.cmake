# The ateam-sandbox executable, and `bwrap` (build/compat/bwrap): the same bwrap face as
# `ateam-sandbox bwrap`, built as its own executable so that the face never depends on the
# name it is run by (/proc/self/exe, a renamed copy). Included from the top-level
# CMakeLists.txt after every library target exists.
add_executable(ateam-sandbox
  ${PROJECT_SOURCE_DIR}/cli/main.cc
  ${PROJECT_SOURCE_DIR}/cli/bwrap_command.cc
  ${PROJECT_SOURCE_DIR}/cli/run_command.cc
  ${PROJECT_SOURCE_DIR}/cli/name_service.cc
  ${PROJECT_SOURCE_DIR}/cli/harvest_command.cc
  ${PROJECT_SOURCE_DIR}/cli/dispatches_command.cc
  ${PROJECT_SOURCE_DIR}/cli/cache_listing.cc
)
# cli/version.h is generated from cli/version.h.in: the version of project().
configure_file(${PROJECT_SOURCE_DIR}/cli/version.h.in ${PROJECT_BINARY_DIR}/generated/cli/version.h
               @ONLY)
target_include_directories(ateam-sandbox PRIVATE ${PROJECT_SOURCE_DIR}
                                                 ${PROJECT_BINARY_DIR}/generated)
target_link_libraries(ateam-sandbox PRIVATE sbx_cli_bwrap sbx_cli_run sbx_doctor sbx_supervise sbx_dispatch sbx_runtime sbx::fmt CLI11::CLI11)
# Every exec of the runtime (the bwrap face, `run`, the supervisor in each sandbox) pays
# for the dynamic loader; a static PIE pays nothing and keeps ASLR. docs/performance.md has
# the measurement. Name lookups are limited to glibc's built-in NSS modules (files, dns):
# any other module named in the host's nsswitch.conf would be loaded from the host's glibc,
# another build than the one linked in, and crash (cli/name_service.h); ld's warnings about
# getpwnam and getaddrinfo are expected. Sanitizer runtimes cannot be linked statically, so
# those builds keep only glibc dynamic.
option(SBX_STATIC_EXE "Link ateam-sandbox and bwrap as static PIEs" ON)
# bwrap needs the parser and the runtime only: no run, supervise or doctor.
add_executable(bwrap
  ${PROJECT_SOURCE_DIR}/cli/bwrap_main.cc
  ${PROJECT_SOURCE_DIR}/cli/bwrap_command.cc
)
target_include_directories(bwrap PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(bwrap PRIVATE sbx_cli_bwrap sbx_runtime sbx::fmt)
foreach(exe ateam-sandbox bwrap)
  if(SBX_STATIC_EXE AND NOT (SBX_ASAN OR SBX_UBSAN OR SBX_TSAN OR SBX_SHARED_SECURITY_LIBS))
    # -static-pie picks rcrt1.o; adding -static-libgcc would swap in the wrong start files.
    target_link_options(${exe} PRIVATE -static-pie)
    # cli/name_service.h: only glibc's built-in NSS modules in a static executable.
    target_compile_definitions(${exe} PRIVATE SBX_STATIC_GLIBC)
  else()
    target_link_options(${exe} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  set_project_warnings(${exe})
endforeach()
set_target_properties(ateam-sandbox PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
set_target_properties(bwrap PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/compat)
# Build trees from before bwrap was its own executable hold a symlink to ateam-sandbox
# there; the linker would write through it.
if(IS_SYMLINK ${CMAKE_BINARY_DIR}/compat/bwrap)
  file(REMOVE ${CMAKE_BINARY_DIR}/compat/bwrap)
endif()
