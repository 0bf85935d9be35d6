// The --status-json document of `ateam-sandbox run`.
#pragma once

#include <span>
#include <string>

#include "dispatch/request/result.h"

namespace sbx::dispatch {

// The --status-json document.
std::string RenderStatusJson(const DispatchResult& result);

// The `labels` object of the status document and of `ls --json`: {"KEY": "VALUE", ...}.
std::string RenderLabelsJson(std::span<const DispatchLabel> labels);

}  // namespace sbx::dispatch
