#include "core/aws_profiles.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h before fmt 11)

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "core/suggest.hpp"

namespace mb::aws {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The reader's place: the section and key a continuation line extends.
struct Reader {
  SharedFile file;
  Section* section = nullptr;
  std::string* value = nullptr;
  std::size_t line_no = 0;

  Error bad(std::string_view what) const {
    return usage_error(fmt::format("{}, line {}: {}", file.shown, line_no, what));
  }

  void read(std::string_view raw) {
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') return;
    const bool indented = std::isspace(static_cast<unsigned char>(raw.front()));
    if (indented && value) {  // a continuation: nested settings (s3 = ...) keep their lines
      *value += "\n" + std::string(line);
      return;
    }
    if (line.front() == '[') return open(line);
    const auto eq = line.find_first_of("=:");
    if (eq == std::string_view::npos || eq == 0) throw bad("expected [SECTION], KEY = VALUE or a comment");
    if (!section) throw bad("a setting before any [SECTION]");
    const std::string key = lower(trim(line.substr(0, eq)));
    const auto [it, fresh] = section->emplace(key, std::string(trim(line.substr(eq + 1))));
    if (!fresh) throw bad(fmt::format("\"{}\" is given twice in its section", key));
    value = &it->second;
  }

  void open(std::string_view line) {
    if (line.back() != ']') throw bad("a section header must end with ']'");
    const std::string name(trim(line.substr(1, line.size() - 2)));
    if (name.empty()) throw bad("an empty section name");
    const auto [it, fresh] = file.sections.emplace(name, Section{});
    if (!fresh) throw bad(fmt::format("section [{}] is given twice", name));
    section = &it->second;
    value = nullptr;
  }
};

}  // namespace

SharedFile parse_shared_file(std::string_view text, std::string shown) {
  Reader r;
  r.file.shown = std::move(shown);
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    ++r.line_no;
    r.read(line);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return std::move(r.file);
}

const Section* config_profile(const SharedFile& config, const std::string& name) {
  const auto find = [&](const std::string& section) -> const Section* {
    const auto it = config.sections.find(section);
    return it == config.sections.end() ? nullptr : &it->second;
  };
  if (name == "default")
    if (const Section* s = find("default")) return s;
  return find("profile " + name);
}

const Section* credentials_profile(const SharedFile& credentials, const std::string& name) {
  const auto it = credentials.sections.find(name);
  return it == credentials.sections.end() ? nullptr : &it->second;
}

std::optional<std::string> Profile::get(const std::string& key) const {
  for (const Section* s : {credentials, config}) {
    if (!s) continue;
    const auto it = s->find(key);
    if (it != s->end() && !it->second.empty()) return it->second;
  }
  return std::nullopt;
}

Profile find_profile(const SharedFile& credentials, const SharedFile& config, const std::string& name) {
  return Profile{name, credentials_profile(credentials, name), config_profile(config, name)};
}

std::vector<std::string> profile_names(const SharedFile& credentials, const SharedFile& config) {
  std::vector<std::string> names;
  for (const auto& [section, keys] : credentials.sections) names.push_back(section);
  for (const auto& [section, keys] : config.sections) {
    if (section == "default") names.push_back(section);
    if (section.starts_with("profile ")) names.emplace_back(trim(std::string_view(section).substr(8)));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string other_profiles_hint(const SharedFile& credentials, const SharedFile& config, const std::string& used) {
  std::vector<std::string> others = profile_names(credentials, config);
  std::erase(others, used);
  if (others.empty()) return {};
  const bool one = others.size() == 1;
  return fmt::format("{} {} {} in those files too: pick {} with AWS_PROFILE={}", one ? "profile" : "profiles",
                     fmt::join(others, ", "), one ? "is" : "are", one ? "it" : "one", others.front());
}

std::string unknown_profile_hint(const SharedFile& credentials, const SharedFile& config, const std::string& named) {
  const std::vector<std::string> names = profile_names(credentials, config);
  if (names.empty()) return {};
  if (const auto near = nearest(named, names)) return fmt::format("did you mean {}? (AWS_PROFILE={})", *near, *near);
  return fmt::format("the profiles there: {}", fmt::join(names, ", "));
}

}  // namespace mb::aws
