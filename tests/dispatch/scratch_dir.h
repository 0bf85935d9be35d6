// A scratch directory for the dispatch tests, and a reader for what they leave in it. The
// directory is 0755 so that a child switched to another uid
// can reach it: in /tmp when root owns /tmp, else /var/tmp (some machines give /tmp to the
// overflow uid, and `run` refuses roots below a directory another uid owns).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sbx::dispatch {

class ScratchDir {
 public:
  ScratchDir() {
    struct stat st {};
    std::string base = ::stat("/tmp", &st) == 0 && st.st_uid == 0 ? "/tmp" : "/var/tmp";
    std::string tmpl = base + "/dispatch-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    ::chmod(tmpl.c_str(), 0755);
    path_ = tmpl;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole content of a file ("" when it cannot be read).
inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace sbx::dispatch
