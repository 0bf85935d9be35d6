# Finds the Debian-packaged dependencies and exposes them as sbx::* interface targets.
# The static archives are preferred: a sandbox launcher pays for every shared object it
# loads on each start (see docs/performance.md), so only glibc stays dynamic.
find_package(PkgConfig REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)

pkg_check_modules(SBX_NL REQUIRED libnl-3.0 libnl-route-3.0)

function(sbx_static_or_shared out_var)
  # ARGN: library base names; picks lib<name>.a when present, else the shared one.
  set(libs "")
  foreach(name IN LISTS ARGN)
    find_library(SBX_LIB_${name} NAMES lib${name}.a ${name} REQUIRED)
    list(APPEND libs ${SBX_LIB_${name}})
  endforeach()
  set(${out_var} ${libs} PARENT_SCOPE)
endfunction()

# Distributions that want their security updates of libcap and libseccomp to reach us link
# them dynamically; the executable is then a dynamic PIE (docs/packaging.md has the cost).
option(SBX_SHARED_SECURITY_LIBS "Link libcap and libseccomp as shared libraries" OFF)
if(SBX_SHARED_SECURITY_LIBS)
  find_library(SBX_SHARED_LIB_cap NAMES cap REQUIRED NO_CACHE)
  find_library(SBX_SHARED_LIB_seccomp NAMES seccomp REQUIRED NO_CACHE)
  set(sbx_cap_libs ${SBX_SHARED_LIB_cap})
  set(sbx_seccomp_libs ${SBX_SHARED_LIB_seccomp})
else()
  sbx_static_or_shared(sbx_cap_libs cap)
  sbx_static_or_shared(sbx_seccomp_libs seccomp)
endif()
sbx_static_or_shared(sbx_nl_libs nl-route-3 nl-3)

add_library(sbx_dep_cap INTERFACE)
target_link_libraries(sbx_dep_cap INTERFACE ${sbx_cap_libs})
add_library(sbx::cap ALIAS sbx_dep_cap)

add_library(sbx_dep_seccomp INTERFACE)
target_link_libraries(sbx_dep_seccomp INTERFACE ${sbx_seccomp_libs})
add_library(sbx::seccomp ALIAS sbx_dep_seccomp)

add_library(sbx_dep_nl INTERFACE)
target_include_directories(sbx_dep_nl SYSTEM INTERFACE ${SBX_NL_INCLUDE_DIRS})
target_link_libraries(sbx_dep_nl INTERFACE ${sbx_nl_libs} pthread m)
add_library(sbx::nl ALIAS sbx_dep_nl)

# fmt header-only: no libfmt.so to load at start-up.
add_library(sbx_dep_fmt INTERFACE)
target_link_libraries(sbx_dep_fmt INTERFACE fmt::fmt-header-only)
add_library(sbx::fmt ALIAS sbx_dep_fmt)

# nodejs http-parser: the broker routes' HTTP/1.1 parser (relay/broker_request.h).
sbx_static_or_shared(sbx_http_parser_libs http_parser)
add_library(sbx_dep_http_parser INTERFACE)
target_link_libraries(sbx_dep_http_parser INTERFACE ${sbx_http_parser_libs})
add_library(sbx::http_parser ALIAS sbx_dep_http_parser)

# OpenSSL: TLS from the host relay to a broker route's upstream (relay/broker_tls.h).
sbx_static_or_shared(sbx_ssl_libs ssl crypto)
add_library(sbx_dep_ssl INTERFACE)
target_link_libraries(sbx_dep_ssl INTERFACE ${sbx_ssl_libs} pthread dl)
add_library(sbx::ssl ALIAS sbx_dep_ssl)
