# set_project_warnings(target): the one place the project's warning flags live.
# Off by default: a packager's compiler or flags may warn where ours do not, and a warning
# must not break their build. The `dev` and `ci` presets (CMakePresets.json) and
# scripts/test.sh turn it on.
option(SBX_WERROR "Treat warnings as errors" OFF)

function(set_project_warnings target)
  set(warnings
      -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
      -Wnull-dereference -Wformat=2 -Wimplicit-fallthrough -Wswitch-enum)
  if(SBX_WERROR)
    list(APPEND warnings -Werror)
  endif()
  target_compile_options(${target} PRIVATE ${warnings})
endfunction()
