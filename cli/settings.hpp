#pragma once
// The process's environment, read once into a Settings value (core/settings.hpp)
// that every command passes down; nothing below cli/ reads the environment.
#include "core/settings.hpp"

namespace mb::cli {

// The variables as the process started with them, taken on first use.
const Settings& process_settings();

}  // namespace mb::cli
