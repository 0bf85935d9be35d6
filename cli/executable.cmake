# The ateam-sandbox executable and its `bwrap` face (build/compat/bwrap). Included from
# the top-level CMakeLists.txt after every library target exists.
add_executable(ateam-sandbox
  ${PROJECT_SOURCE_DIR}/cli/main.cc
  ${PROJECT_SOURCE_DIR}/cli/bwrap_command.cc
  ${PROJECT_SOURCE_DIR}/cli/run_command.cc
)
# cli/version.h is generated from cli/version.h.in: the version of project().
configure_file(${PROJECT_SOURCE_DIR}/cli/version.h.in ${PROJECT_BINARY_DIR}/generated/cli/version.h
               @ONLY)
target_include_directories(ateam-sandbox PRIVATE ${PROJECT_SOURCE_DIR}
                                                 ${PROJECT_BINARY_DIR}/generated)
target_link_libraries(ateam-sandbox PRIVATE sbx_cli_bwrap sbx_doctor sbx_supervise sbx_dispatch sbx_runtime sbx::fmt CLI11::CLI11)
# Every exec of the runtime (the bwrap face, `run`, the supervisor in each sandbox) pays
# for the dynamic loader; a static PIE pays nothing and keeps ASLR. docs/performance.md has
# the measurement. glibc's NSS still works: `files` and `dns` are built into libc.a, and
# any other module (e.g. `systemd`) is dlopen()ed from the host's glibc of the same version;
# ld warns about that for getpwnam and getaddrinfo, which is expected. Sanitizer runtimes
# cannot be linked statically, so those builds keep only glibc dynamic.
option(SBX_STATIC_EXE "Link ateam-sandbox as a static PIE" ON)
if(SBX_STATIC_EXE AND NOT (SBX_ASAN OR SBX_UBSAN OR SBX_TSAN OR SBX_SHARED_SECURITY_LIBS))
  # -static-pie picks rcrt1.o; adding -static-libgcc would swap in the wrong start files.
  target_link_options(ateam-sandbox PRIVATE -static-pie)
else()
  target_link_options(ateam-sandbox PRIVATE -static-libstdc++ -static-libgcc)
endif()
set_target_properties(ateam-sandbox PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
set_project_warnings(ateam-sandbox)

add_custom_command(TARGET ateam-sandbox POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/compat
  COMMAND ${CMAKE_COMMAND} -E create_symlink ../ateam-sandbox ${CMAKE_BINARY_DIR}/compat/bwrap
  VERBATIM)
