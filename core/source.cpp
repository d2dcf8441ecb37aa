#include "core/source.hpp"

#include <filesystem>

namespace mb {

Source::Source(std::string name, std::string shown, std::optional<RemoteAddress> address, Settings settings)
    : name_(std::move(name)),
      shown_(std::move(shown)),
      address_(std::move(address)),
      settings_(std::move(settings)) {}

Source Source::resolve(std::string name, const Settings& settings) {
  check_place(name);
  std::optional<RemoteAddress> address;
  if (mb::is_remote(name)) address = resolve_remote(name, settings);
  std::string shown = shown_name(name);
  return Source(std::move(name), std::move(shown), std::move(address), settings);
}

Source Source::local(std::string path, std::string shown) {
  if (shown.empty()) shown = path;
  return Source(std::move(path), std::move(shown), std::nullopt, {});
}

std::string Source::file_name() const {
  if (!is_remote()) return std::filesystem::path(name_).filename().string();
  const std::string base = name_.substr(0, name_.find('?'));
  return base.substr(base.rfind('/') + 1);
}

Source Source::beside(std::string_view file) const {
  if (is_remote()) return resolve(sibling(name_, file), settings_);
  const std::filesystem::path dir = std::filesystem::path(name_).parent_path();
  return local((dir.empty() ? std::filesystem::path(file) : dir / file).string());
}

}  // namespace mb
