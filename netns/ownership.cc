#include "netns/ownership.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "base/unique_fd.h"

namespace sbx::netns {
namespace {

constexpr char kNotOwned[] = "Network namespace is not owned by our user namespace";

std::string NsId(const struct stat& st) {
  return "user:[" + std::to_string(st.st_ino) + "] on dev " + std::to_string(st.st_dev);
}

base::Result<base::UniqueFd> OpenNs(const char* path) {
  base::UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return base::ErrnoError("Can't open", path);
  return fd;
}

}  // namespace

base::Status CheckNetnsOwnedByUserns(int netns_fd, int userns_fd) {
  // NS_GET_USERNS returns a new O_CLOEXEC fd for the owning user namespace. The kernel only
  // hands it out when that namespace is ours or one of our descendants; for an ancestor's
  // (the host's netns seen from a sandbox) it fails with EPERM, which is our answer too.
  base::UniqueFd owner(::ioctl(netns_fd, NS_GET_USERNS));
  if (!owner) {
    if (errno == EPERM) return base::Error(EPERM, kNotOwned, "(owned by an ancestor)");
    return base::ErrnoError("Can't get the owner of the network namespace", "(NS_GET_USERNS)");
  }
  struct stat owner_st {};
  struct stat self_st {};
  if (::fstat(owner.get(), &owner_st) != 0) {
    return base::ErrnoError("Can't stat the owner of the network namespace");
  }
  if (::fstat(userns_fd, &self_st) != 0) return base::ErrnoError("Can't stat user namespace");
  // Namespaces are identified by the nsfs inode and its device, never by inode alone.
  if (owner_st.st_dev != self_st.st_dev || owner_st.st_ino != self_st.st_ino) {
    return base::Error(EPERM, kNotOwned,
                       "(owned by " + NsId(owner_st) + ", ours is " + NsId(self_st) + ")");
  }
  return {};
}

base::Status CheckNetnsOwnedByOwnUserns() {
  auto net = OpenNs("/proc/thread-self/ns/net");
  if (!net) return net.error();
  auto user = OpenNs("/proc/thread-self/ns/user");
  if (!user) return user.error();
  return CheckNetnsOwnedByUserns(net->get(), user->get());
}

}  // namespace sbx::netns
