#include <fmt/format.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/store/local.hpp"
#include "io/store/remote.hpp"
#include "io/store/store.hpp"
#include "specs/manifest.hpp"

namespace mb::io::store {

std::unique_ptr<Store> open_store(const std::string& where, const Settings& settings) {
  check_place(where);
  if (!is_remote(where) || is_s3(where)) return open_writable(where, settings, {});
  return http_location(where.ends_with("/") ? where : where + "/", settings);
}

std::unique_ptr<WritableStore> open_writable(const std::string& where, const Settings& settings,
                                             const WriteOptions& options) {
  check_place(where);
  if (!is_remote(where)) return local_directory(where);
  if (!is_s3(where))
    throw usage_error(fmt::format("{}: an HTTP(S) location is read-only; write to a directory or an s3:// prefix",
                                  shown_name(where)));
  return s3_prefix(where.ends_with("/") ? where : where + "/", settings, options);
}

namespace {

// The place holding the file `path` names (as `open` opens places), and the file's name in it.
template <typename Opened>
Opened member(const std::string& path, const Settings& settings, auto open) {
  check_place(path);
  if (is_remote(path)) {
    const std::string base = sibling(path, "");
    return {open(base, settings), path.substr(base.size(), path.find('?', base.size()) - base.size())};
  }
  // A bare name stays bare: its directory is "" (the current one), so that
  // messages name the file as it was given.
  const std::filesystem::path p(path);
  return {open(p.parent_path().string(), settings), p.filename().string()};
}

}  // namespace

Member open_member(const std::string& path, const Settings& settings) {
  return member<Member>(path, settings, [](const std::string& where, const Settings& s) {
    return open_store(where, s);
  });
}

WritableMember open_writable_member(const std::string& path, const Settings& settings) {
  return member<WritableMember>(path, settings, [](const std::string& where, const Settings& s) {
    return open_writable(where, s, {});
  });
}

std::optional<Member> open_split(const Source& argument) {
  const std::string& name = argument.name();
  if (is_remote(name)) {
    const std::optional<std::string> manifest = remote_manifest_name(name, specs::kManifestName);
    if (!manifest) return std::nullopt;
    return Member{open_store(sibling(*manifest, ""), argument.settings()), specs::kManifestName};
  }
  std::error_code ec;
  if (std::filesystem::exists(name, ec) && !std::filesystem::is_directory(name, ec)) return std::nullopt;
  return Member{open_store(name, argument.settings()), specs::kManifestName};
}

}  // namespace mb::io::store
