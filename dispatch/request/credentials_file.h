// Reading the --credentials source file: once, by `run`, before anything is created.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::dispatch {

// Credentials files are a few KiB; anything past this is refused rather than copied.
inline constexpr size_t kMaxCredentialsBytes = size_t{1} << 20;

// The content of the --credentials source `path` (absolute), as `flag_value` names it in
// messages. It is opened without following a symlink at its last component, must be a
// regular file of at most kMaxCredentialsBytes, readable by the caller. A root caller reads
// it only when every directory above it belongs to root or to the file's owner and nobody
// else can write there (a sticky one such as /var/tmp may be on the way), so that no other
// user can steer root's read to a file of root's. Every refusal is one line.
// `flag` names the option in messages (--broker-secret and --broker-ca files are read the
// same way).
base::Result<std::string> ReadCredentialsFile(const std::string& path,
                                              const std::string& flag_value, bool root_caller,
                                              std::string_view flag = "--credentials");

}  // namespace sbx::dispatch
