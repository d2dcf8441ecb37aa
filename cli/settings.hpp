#pragma once
// The process's environment, read once into a Settings value (core/settings.hpp)
// that every command passes down; nothing below cli/ reads the environment.
#include "core/settings.hpp"

namespace mb::cli {

// The variables as the process started with them, taken on first use, and
// (once install_credentials has run) where s3:// requests find credentials.
const Settings& process_settings();

// Gives the settings the AWS CLI's credential chain (io/aws/chain.hpp), or
// anonymous requests with --no-sign-request, and what s3:// requests ask
// of the store. Once, before a command runs.
void install_remote(bool no_sign_request, S3Options s3);

}  // namespace mb::cli
