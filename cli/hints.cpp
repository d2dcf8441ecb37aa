#include "cli/hints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/suggest.hpp"

namespace mb::cli {
namespace {

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// Every spelling of the app's options: "--chunks", "-n", ...
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string without_dashes(const std::string& name) {
  return name.substr(std::min(name.find_first_not_of('-'), name.size()));
}

// The option `arg` gives ("--chunks=4" gives --chunks, "-n4" gives -n), in
// `scope` or the app, and whether the next argument is its value.
struct Known {
  const CLI::Option* option = nullptr;
  bool takes_next = false;
};

Known known_option(const CLI::App& scope, const CLI::App& app, const std::string& arg) {
  const bool long_form = arg.rfind("--", 0) == 0;
  const std::string name = long_form ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
  const CLI::Option* opt = scope.get_option_no_throw(name);
  if (opt == nullptr) opt = app.get_option_no_throw(name);
  if (opt == nullptr) return {};
  const bool value_attached = long_form ? arg.find('=') != std::string::npos : arg.size() > 2;
  return {opt, opt->get_items_expected_max() > 0 && !value_attached};
}

// The hint for an unknown option, or nullopt when no option of `scope` is close.
std::optional<std::string> hint(const CLI::App& scope, const CLI::App& app, const std::string& arg) {
  const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(0, arg.find('=')) : arg;
  std::vector<std::string> names = option_names(scope);
  std::vector<std::string> bare;
  for (const auto& n : names) bare.push_back(without_dashes(n));
  const auto near = nearest(without_dashes(name), bare);
  if (!near) return std::nullopt;
  std::string spelled;  // the candidate as the help writes it, long form preferred
  for (const auto& n : names)
    if (without_dashes(n) == *near && (spelled.empty() || n.rfind("--", 0) == 0)) spelled = n;
  const std::string where = &scope == &app ? "" : " for " + scope.get_name();
  return fmt::format("unknown option '{}'{}: did you mean {}? (see 'microbatch {}--help')", name, where, spelled,
                     &scope == &app ? "" : scope.get_name() + " ");
}

}  // namespace

std::string unknown_command_message(const CLI::App& app, const std::string& word) {
  const std::vector<std::string> names = subcommand_names(app);
  const auto near = nearest(word, names);
  return fmt::format("unknown command '{}'{} (expected {}; see --help)", word,
                     near ? fmt::format(": did you mean {}?", *near) : std::string(), fmt::join(names, ", "));
}

std::optional<std::string> misspelt_option(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* scope = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // what follows is positional
    if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1]))) {
      if (scope == &app)
        for (const CLI::App* sub : app.get_subcommands({}))
          if (sub->get_name() == arg) scope = sub;
      continue;
    }
    const Known known = known_option(*scope, app, arg);
    if (known.option == nullptr) return hint(*scope, app, arg);
    if (known.takes_next) ++i;
  }
  return std::nullopt;
}

}  // namespace mb::cli
