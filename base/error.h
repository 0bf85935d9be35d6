// Error values and Result<T>: how every fallible function in runtime/, netns/ and relay/
// reports failure. An Error carries the errno (0 when there is none), the operation that
// failed and its subject, so the caller can both react to the errno and print one line
// that says what went wrong: "Can't mkdir /usr/x: Read-only file system".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace sbx::base {

class Error {
 public:
  enum class Kind {
    kSystem,  // a failed operation, with or without errno
    kUsage,   // the command line is incomplete: the caller prints usage
  };

  // `op` is the sentence start ("Can't mkdir"), `subject` what it was applied to.
  Error(int err, std::string op, std::string subject = {})
      : err_(err), op_(std::move(op)), subject_(std::move(subject)) {}

  static Error Usage() {
    Error e(0, "usage");
    e.kind_ = Kind::kUsage;
    return e;
  }
  // An error with a fixed text and no errno.
  static Error Message(std::string text) { return {0, std::move(text)}; }

  [[nodiscard]] int err() const { return err_; }
  [[nodiscard]] const std::string& op() const { return op_; }
  [[nodiscard]] const std::string& subject() const { return subject_; }
  [[nodiscard]] Kind kind() const { return kind_; }

  // "op subject: strerror(err)"; the parts that are empty are left out.
  [[nodiscard]] std::string Render() const;

  // The same error with `context` in front ("--out: Can't open /x: Permission denied"):
  // the errno, the subject and the kind stay, so a caller further up can still react to
  // them. Use this instead of Message(context + e.Render()), which loses the errno.
  [[nodiscard]] Error WithContext(const std::string& context) const;

 private:
  int err_;
  std::string op_;
  std::string subject_;
  Kind kind_ = Kind::kSystem;
};

// Result<T>: a T or an Error. Call and check stay together:
//   auto fd = OpenDir(path); if (!fd) return fd.error();
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT implicit
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT implicit

  explicit operator bool() const { return v_.index() == 0; }
  [[nodiscard]] bool ok() const { return v_.index() == 0; }

  T& value() & { return std::get<0>(v_); }
  [[nodiscard]] const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT implicit

  explicit operator bool() const { return !error_.has_value(); }
  [[nodiscard]] bool ok() const { return !error_.has_value(); }
  [[nodiscard]] const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

// Error from the current errno.
Error ErrnoError(std::string op, std::string subject = {});

}  // namespace sbx::base

// Binds the value of a Result expression to `lhs`, or returns its error from the calling
// function (whose own Result or Status the Error converts to). `lhs` may declare:
//   SBX_ASSIGN_OR_RETURN(auto fd, OpenDir(path));
// The explicit form stays right where the error needs handling of its own:
//   auto fd = OpenDir(path); if (!fd) return fd.error().WithContext("--out");
// `lhs` is a declaration and `result` a name: neither can be put in parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define SBX_ASSIGN_OR_RETURN(lhs, expr) \
  SBX_ASSIGN_OR_RETURN_IMPL_(SBX_RESULT_NAME_(__LINE__), lhs, expr)
// Returns the error of a Status (or any Result) expression from the calling function.
#define SBX_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    if (auto sbx_status_ = (expr); !sbx_status_) { \
      return sbx_status_.error();                  \
    }                                              \
  } while (false)

#define SBX_RESULT_NAME_(line) SBX_RESULT_NAME_JOIN_(sbx_result_, line)
#define SBX_RESULT_NAME_JOIN_(a, b) a##b
#define SBX_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                               \
  if (!result) return result.error();                 \
  lhs = std::move(result).value()
// NOLINTEND(bugprone-macro-parentheses)
