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

Error Error::WithContext(const std::string& context) const {
  Error wrapped = *this;
  wrapped.op_ = op_.empty() ? context : context + ": " + op_;
  return wrapped;
}

Error ErrnoError(std::string op, std::string subject) {
  return {errno, std::move(op), std::move(subject)};
}

}  // namespace sbx::base
