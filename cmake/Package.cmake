# The .deb: `cpack -G DEB` in a build configured as the `package` preset does
# (docs/packaging.md; scripts/package-test.sh builds, installs and removes it).
set(CPACK_PACKAGE_NAME ateam-sandbox)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ateam")
set(CPACK_PACKAGE_CONTACT "ateam-sandbox maintainers <ateam-sandbox@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "sandbox runtime for coding agents, and a drop-in bwrap")
set(CPACK_PACKAGE_DESCRIPTION
    "ateam-sandbox runs a coding agent in a sandbox made for one dispatch: a fresh clone of\n"
    "the repository and an output directory as the only writable places, read-only host\n"
    "system directories, and a private network whose only way out is one TLS tunnel per\n"
    "allowed endpoint. Invoked as bwrap it speaks bubblewrap's command line.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Whatever is linked dynamically (glibc always; libcap and libseccomp with
# SBX_SHARED_SECURITY_LIBS) is found by dpkg-shlibdeps (package dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The static executable carries glibc's code but loads the host glibc's NSS modules
# (cli/executable.cmake): the host's glibc must be at least the one we linked.
execute_process(COMMAND getconf GNU_LIBC_VERSION OUTPUT_VARIABLE sbx_glibc
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
string(REGEX MATCH "[0-9]+\\.[0-9]+" sbx_glibc_version "${sbx_glibc}")
if(NOT sbx_glibc_version)
  message(FATAL_ERROR "Can't tell the glibc version (getconf GNU_LIBC_VERSION: '${sbx_glibc}')")
endif()
# git: `run --repo` clones with it. A dynamic executable gets its libc6 from dpkg-shlibdeps.
if(SBX_STATIC_EXE AND NOT (SBX_ASAN OR SBX_UBSAN OR SBX_TSAN OR SBX_SHARED_SECURITY_LIBS))
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= ${sbx_glibc_version}), git")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "git")
endif()
# bubblewrap: `--backend bwrap`; apparmor: loads the profile where the kernel restricts
# unprivileged user namespaces.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bubblewrap, apparmor")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_GENERATOR DEB)
include(CPack)
