# set_project_warnings(target): the one place the project's warning flags live.
option(SBX_WERROR "Treat warnings as errors" ON)

function(set_project_warnings target)
  set(warnings
      -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
      -Wnull-dereference -Wformat=2 -Wimplicit-fallthrough -Wswitch-enum)
  if(SBX_WERROR)
    list(APPEND warnings -Werror)
  endif()
  target_compile_options(${target} PRIVATE ${warnings})
endfunction()
