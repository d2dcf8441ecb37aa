#include "cli/settings.hpp"

#include <map>
#include <string>

#include "io/aws/chain.hpp"

extern char** environ;  // POSIX: the process's variables, NAME=VALUE

namespace mb::cli {

namespace {

Settings& held() {
  static Settings settings = [] {
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

}  // namespace

const Settings& process_settings() { return held(); }

void install_remote(bool no_sign_request, S3Options s3) {
  held() = held().with_aws(io::aws::credential_chain(held(), {.no_sign_request = no_sign_request})).with_s3(std::move(s3));
}

}  // namespace mb::cli
