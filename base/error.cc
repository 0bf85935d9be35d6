#include "base/error.h"

#include <cerrno>
#include <cstring>

namespace sbx::base {

std::string Error::Render() const {
  std::string out = op_;
  if (!subject_.empty()) {
    if (!out.empty()) out += ' ';
    out += subject_;
  }
  if (err_ != 0) {
    out += ": ";
    out += std::strerror(err_);  // NOLINT(concurrency-mt-unsafe): single-threaded callers
  }
  return out;
}

Error ErrnoError(std::string op, std::string subject) {
  return {errno, std::move(op), std::move(subject)};
}

}  // namespace sbx::base
