// Checking that a network namespace belongs to the caller's own user namespace.
//
// Who calls it: the tunnel supervisor, right after unshare(CLONE_NEWNET). A netns created by
// that call is owned by the supervisor's user namespace; if the unshare silently did not
// happen (a seccomp filter returning 0, a wrapper that ignored the flag), the supervisor is
// still in a netns owned by an ancestor user namespace, typically the host's, and must not
// bind its listeners there. Any thread; opens and closes its own fds (all O_CLOEXEC).
#pragma once

#include "base/error.h"

namespace sbx::netns {

// OK when the owner of /proc/thread-self/ns/net (ioctl NS_GET_USERNS) is the namespace at
// /proc/thread-self/ns/user, compared by (st_dev, st_ino). Error with EPERM when another user
// namespace owns it: an ancestor (the kernel refuses NS_GET_USERNS) or a descendant.
// Other errnos: /proc is not mounted or NS_GET_USERNS is unsupported (ENOTTY, Linux < 4.9).
// thread-self, not self: namespaces belong to threads, and unshare() moves only the caller.
base::Status CheckNetnsOwnedByOwnUserns();

// The same check for any pair of namespace fds (borrowed: O_RDONLY or O_PATH opens of
// /proc/PID/ns/net and /proc/PID/ns/user, or of bind mounts of them).
base::Status CheckNetnsOwnedByUserns(int netns_fd, int userns_fd);

}  // namespace sbx::netns
