#include "io/aws/inputs.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace mb::io::aws {

const char* setting(const Settings& settings, const char* name) {
  const char* v = settings.get(name);
  return v && *v ? v : nullptr;
}

std::string token_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) throw usage_error(fmt::format("{}: cannot read {}", what, path));
  std::string out = text.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace mb::io::aws
