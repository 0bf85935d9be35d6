// `ateam-sandbox run [OPTIONS] -- COMMAND [ARGS...]`: flags -> DispatchRequest ->
// runtime::RunDispatch. Exit code: the agent's own (128+signal when killed), 124 on
// --timeout, 125 when the runtime itself fails (with one line on stderr).
#pragma once

#include <span>
#include <string>

namespace sbx::cli {

int RunRunCommand(std::span<const std::string> args);

}  // namespace sbx::cli
