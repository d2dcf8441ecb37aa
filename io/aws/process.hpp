#pragma once
// A profile's credential_process: the command run (split into words as the
// AWS CLI splits it, no shell, with the run's settings as its environment:
// what a shell would have handed it when the run started), its standard
// output read as the credentials' JSON. Its standard error goes to ours:
// its own messages.
#include <string>

#include "core/credentials.hpp"
#include "core/settings.hpp"

namespace mb::io::aws {

// Throws mb::Error (a usage error) when the command cannot be started,
// exits with a failure, or prints something that is not credentials; the
// message names the profile, never the output.
Credentials process_credentials_of(const std::string& command, const std::string& source, const Settings& settings);

}  // namespace mb::io::aws
