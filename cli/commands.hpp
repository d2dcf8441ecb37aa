#pragma once
// Each subcommand adds itself to the app; its callback runs it.
#include <CLI/CLI.hpp>

namespace mb::cli {

void setup_split(CLI::App& app);
void setup_merge(CLI::App& app);
void setup_inspect(CLI::App& app);
void setup_finish(CLI::App& app);
void setup_verify(CLI::App& app);
void setup_diff(CLI::App& app);

}  // namespace mb::cli
