// Name lookups (users, groups, hosts) of a statically linked executable.
#pragma once

namespace sbx::cli {

// In a static build, limits glibc's name service to what libc.a has built in: "files" for
// users and groups, "files dns" for hosts. Any other module named in the host's
// /etc/nsswitch.conf (systemd, sss, mdns4_minimal, resolve, ...) would be dlopen()ed from the
// host's glibc, a different build than the one linked in, and crash the process on the
// first lookup. Users known only to such a module must be given as UID[:GID]; hosts resolve
// through /etc/hosts and the DNS servers of /etc/resolv.conf (systemd-resolved's stub
// included). In a dynamic build nothing changes. Call before any lookup.
void RestrictNameServiceToBuiltins();

}  // namespace sbx::cli
