// Can this process create the sandbox's namespaces at all? Asked before a bwrap-backend
// launch and after a failed native one.
// Containers (a seccomp filter, AppArmor, user.max_user_namespaces=0, a masked /proc)
// refuse them, and the raw kernel error then says nothing about why; this turns it into one
// line that points to `ateam-sandbox doctor`, which tells which layer blocks it and how to
// fix it.
#pragma once

#include <string>

#include "base/error.h"

namespace sbx::dispatch {

// What the preflight child could not do.
enum class PreflightStep {
  kCreate,  // clone(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID)
  kMount,   // a tmpfs in that mount namespace
  kProc,    // a fresh /proc for that pid namespace
};

// The one-line message for `step` refused with `err`.
std::string NamespaceRefusedMessage(PreflightStep step, int err);

// Clones a child into a new user, mount and pid namespace that mounts a tmpfs and a fresh
// /proc there and exits: what the sandbox needs first. A user namespace without the
// capabilities to mount (Ubuntu's AppArmor restriction, docker-default) or a /proc with
// masked paths fails here too. Fails with the message above.
base::Status CheckNamespacesAllowed();

}  // namespace sbx::dispatch
