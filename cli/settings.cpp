#include "cli/settings.hpp"

#include <map>
#include <string>

extern char** environ;  // POSIX: the process's variables, NAME=VALUE

namespace mb::cli {

const Settings& process_settings() {
  static const Settings settings = [] {
    std::map<std::string, std::string> variables;
    for (char** entry = environ; entry && *entry; ++entry) {
      const std::string text(*entry);
      const auto eq = text.find('=');
      if (eq != std::string::npos) variables.emplace(text.substr(0, eq), text.substr(eq + 1));
    }
    return Settings(std::move(variables));
  }();
  return settings;
}

}  // namespace mb::cli
