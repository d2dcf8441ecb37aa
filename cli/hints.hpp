#pragma once
// "Did you mean ...?" for a misspelt subcommand or option.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace mb::cli {

// The message for a first argument that names no subcommand: "unknown
// command 'splt': did you mean split? (...)" when one is close.
std::string unknown_command_message(const CLI::App& app, const std::string& word);

// The first option on the command line that neither the app nor the
// subcommand it names takes, when one of theirs is close to it: "unknown
// option '--dp-degre' for split: did you mean --dp-degree?". Values of
// options are skipped (`-o -x` names a directory "-x"); a negative number
// is no option. nullopt when no option is unknown or none is close (CLI11's
// own message then stands).
std::optional<std::string> misspelt_option(const CLI::App& app, int argc, const char* const* argv);

}  // namespace mb::cli
