// The --status-json document of `ateam-sandbox run`.
#pragma once

#include <string>

#include "dispatch/request/result.h"

namespace sbx::dispatch {

// The --status-json document.
std::string RenderStatusJson(const DispatchResult& result);

}  // namespace sbx::dispatch
