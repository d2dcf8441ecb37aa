#pragma once
// What the credential sources read besides the network: a variable of the
// run's settings, and a token file (read afresh at each fetch: tokens rotate).
#include <string>

#include "core/settings.hpp"

namespace mb::io::aws {

// The variable's value, or null when it is unset or empty (as the AWS CLI
// takes an empty variable).
const char* setting(const Settings& settings, const char* name);

// The file's text without its final line break. Throws mb::Error (a usage
// error) naming `what` and the path when it cannot be read.
std::string token_file(const std::string& path, const std::string& what);

}  // namespace mb::io::aws
