// ReadCredentialsFile and SandboxFiles: what the sandbox's copy of the credentials and its
// /etc/resolv.conf hold, and every refusal one line, before anything is created.
#include "dispatch/host/sandbox_files.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <variant>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

// A scratch directory in /var/tmp (root's and sticky everywhere, which a root caller's
// check accepts; /tmp may belong to another uid in a container).
class Scratch {
 public:
  Scratch() {
    std::string templ = "/var/tmp/sbx-files-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] std::string Sub(const std::string& name) const { return path_ + "/" + name; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Refusal(const std::string& path, bool root_caller) {
  auto content = ReadCredentialsFile(path, path, root_caller);
  EXPECT_FALSE(content);
  if (content) return "";
  std::string message = content.error().Render();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

std::string ReadFd(int fd) {
  std::string out;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(SandboxFilesTest, CredentialsAreReadWhateverTheirMode) {
  Scratch dir;
  std::ofstream(dir.Sub("c.json")) << "token";
  ::chmod(dir.Sub("c.json").c_str(), 0600);
  auto content = ReadCredentialsFile(dir.Sub("c.json"), "c.json", ::geteuid() == 0);
  ASSERT_TRUE(content) << content.error().Render();
  EXPECT_EQ(*content, "token");
}

TEST(SandboxFilesTest, SymlinksDirectoriesAndLargeFilesAreRefused) {
  Scratch dir;
  std::ofstream(dir.Sub("c.json")) << "token";
  ASSERT_EQ(::symlink("c.json", dir.Sub("link.json").c_str()), 0);
  EXPECT_NE(Refusal(dir.Sub("link.json"), false).find("is a symlink"), std::string::npos);
  EXPECT_NE(Refusal(dir.path(), false).find("not a regular file"), std::string::npos);
  ASSERT_EQ(::mkfifo(dir.Sub("fifo").c_str(), 0600), 0);
  EXPECT_NE(Refusal(dir.Sub("fifo"), false).find("not a regular file"), std::string::npos);
  {
    std::ofstream big(dir.Sub("big.json"));
    big << std::string(kMaxCredentialsBytes + 1, 'x');
  }
  EXPECT_NE(Refusal(dir.Sub("big.json"), false).find("KiB a credentials file may have"),
            std::string::npos);
  EXPECT_NE(Refusal(dir.Sub("missing.json"), false).find("No such file"), std::string::npos);
}

TEST(SandboxFilesTest, ARootCallerRefusesADirectoryOthersCanWrite) {
  Scratch dir;
  std::filesystem::create_directory(dir.Sub("shared"));
  ::chmod(dir.Sub("shared").c_str(), 0777);  // not sticky: anybody could swap the file
  std::ofstream(dir.Sub("shared/c.json")) << "token";
  EXPECT_NE(Refusal(dir.Sub("shared/c.json"), true).find("writable by group or other"),
            std::string::npos);
  // Refused by the root rule only: its own permissions let any caller read it.
  EXPECT_TRUE(ReadCredentialsFile(dir.Sub("shared/c.json"), "c.json", false));
}

TEST(SandboxFilesTest, TheCopiesAreSealedMemfds) {
  Scratch dir;
  std::ofstream(dir.Sub("c.json")) << "token";
  auto content = ReadCredentialsFile(dir.Sub("c.json"), "c.json", false);
  ASSERT_TRUE(content) << content.error().Render();
  auto files =
      SandboxFiles::Make({{".config/t", *content}, {".other", "second"}}, {{".claude.json", "{}"}});
  ASSERT_TRUE(files) << files.error().Render();
  ASSERT_EQ(files->credentials.size(), 2U);
  const int fd = files->credentials[0].fd.get();
  EXPECT_EQ(ReadFd(fd), "token");
  EXPECT_EQ(ReadFd(files->credentials[1].fd.get()), "second");
  EXPECT_LT(::write(fd, "x", 1), 0);
  int seals = ::fcntl(fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
            F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  auto fds = files->CredentialFds();
  ASSERT_EQ(fds.size(), 2U);
  EXPECT_EQ(fds[0].fd, fd);
  EXPECT_EQ(fds[0].dest, ".config/t");
  ASSERT_EQ(files->AgentStateFds().size(), 1U);
  EXPECT_EQ(files->AgentStateFds()[0].dest, ".claude.json");
}

TEST(SandboxFilesTest, TheLayoutBindsTheCopiesReadOnly) {
  DispatchRequest request;
  request.workspace = "/work/ws";
  request.credentials = {"/var/tmp/c.json:.config/tool/token"};
  request.command = {"true"};
  DispatchHostPaths paths;
  paths.workspace = "/work/ws";
  paths.out = "/work/out";
  paths.hosts_fd = 7;
  EXPECT_FALSE(BuildDispatchSpec(request, paths)) << "credentials without their copy";
  paths.credentials = {{".config/tool/token", 8}};
  paths.resolv_conf_fd = 9;
  auto spec = BuildDispatchSpec(request, paths);
  ASSERT_TRUE(spec) << spec.error().Render();
  std::vector<std::string> data;
  for (const auto& op : spec->ops) {
    const auto* bind = std::get_if<runtime::BindDataOp>(&op);
    if (bind == nullptr) continue;
    data.push_back(fmt::format("{} {} {} {:04o}", bind->fd, bind->dest, bind->read_only,
                               bind->perms.value_or(0)));
  }
  EXPECT_EQ(data,
            (std::vector<std::string>{"8 /home/ateam-sandbox/.config/tool/token true 0400",
                                      "7 /etc/hosts true 0644", "9 /etc/resolv.conf true 0644"}));
  for (const auto& op : spec->ops) {
    const auto* bind = std::get_if<runtime::BindOp>(&op);
    EXPECT_TRUE(bind == nullptr || bind->source != "/var/tmp/c.json") << "the original is bound";
  }
}

TEST(SandboxFilesTest, TheResolvConfNamesNoServer) {
  std::string text = SandboxResolvConf();
  EXPECT_EQ(text.find("nameserver"), std::string::npos);
  EXPECT_NE(text.find("/etc/hosts"), std::string::npos);
}

}  // namespace
}  // namespace sbx::dispatch
