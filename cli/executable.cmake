# The ateam-sandbox executable and its `bwrap` face (build/compat/bwrap). Included from
# the top-level CMakeLists.txt after every library target exists.
add_executable(ateam-sandbox
  ${PROJECT_SOURCE_DIR}/cli/main.cc
  ${PROJECT_SOURCE_DIR}/cli/bwrap_command.cc
  ${PROJECT_SOURCE_DIR}/cli/run_command.cc
)
target_include_directories(ateam-sandbox PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(ateam-sandbox PRIVATE sbx_cli_bwrap sbx_doctor sbx_supervise sbx_dispatch sbx_runtime sbx::fmt CLI11::CLI11)
# Only glibc is loaded at start-up: every other library is linked in.
target_link_options(ateam-sandbox PRIVATE -static-libstdc++ -static-libgcc)
set_target_properties(ateam-sandbox PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
set_project_warnings(ateam-sandbox)

add_custom_command(TARGET ateam-sandbox POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/compat
  COMMAND ${CMAKE_COMMAND} -E create_symlink ../ateam-sandbox ${CMAKE_BINARY_DIR}/compat/bwrap
  VERBATIM)
install(TARGETS ateam-sandbox RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/ateam-sandbox.1 DESTINATION share/man/man1)
