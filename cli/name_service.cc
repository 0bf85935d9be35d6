#include "cli/name_service.h"

#include <nss.h>

namespace sbx::cli {

void RestrictNameServiceToBuiltins() {
#ifdef SBX_STATIC_GLIBC
  // __nss_configure_lookup replaces the nsswitch.conf line of one database for this process;
  // it never fails for these database names.
  ::__nss_configure_lookup("passwd", "files");
  ::__nss_configure_lookup("group", "files");
  ::__nss_configure_lookup("shadow", "files");
  ::__nss_configure_lookup("initgroups", "files");
  ::__nss_configure_lookup("hosts", "files dns");
  ::__nss_configure_lookup("services", "files");
  ::__nss_configure_lookup("protocols", "files");
#endif
}

}  // namespace sbx::cli
