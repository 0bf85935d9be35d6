// Fuzzes the sandbox's /etc/hosts writer (netns::RenderHostsFile) with any host names and
// ports. A rendered file must consist of hosts(5) lines only: the comment, the two loopback
// lines, then "127.77.0.N name" per route, the names being plain DNS names.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "netns/hosts.h"

namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return -1;
  sbx::fuzz::InputReader input(data, size);
  std::vector<sbx::netns::HostRoute> routes;
  while (!input.empty()) {
    sbx::netns::HostRoute route;
    route.port = static_cast<uint16_t>((input.Byte() << 8) | input.Byte());
    route.host = input.Word();
    routes.push_back(std::move(route));
  }
  auto file = sbx::netns::RenderHostsFile(routes);
  if (!file) {
    const std::string message = file.error().Render();
    sbx::fuzz::Check(message.find('\n') == std::string::npos, "error message spans lines");
    return 0;
  }
  std::string_view rest = *file;
  size_t line_number = 0;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    sbx::fuzz::Check(newline != std::string_view::npos, "last line without a newline");
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    ++line_number;
    if (line_number <= 3) continue;  // the fixed header, checked by the unit tests
    const size_t route = line_number - 4;
    auto address = sbx::netns::RouteAddress(route);
    sbx::fuzz::Check(address.ok(), "more lines than routes");
    sbx::fuzz::Check(line.starts_with(*address + " "), "route line without its address");
    const std::string_view name = line.substr(address->size() + 1);
    sbx::fuzz::Check(!name.empty(), "route line without a name");
    for (char c : name) sbx::fuzz::Check(IsNameChar(c), "name with a character hosts(5) splits on");
  }
  sbx::fuzz::Check(line_number == routes.size() + 3, "one line per route");
  return 0;
}
