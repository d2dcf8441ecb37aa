#include "io/merge/inputs.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "core/error.hpp"

namespace mb::io {
namespace {
namespace fs = std::filesystem;

// The manifest beside `file` that lists it, if any: (manifest path, index).
struct Listing {
  std::string manifest_path;
  std::size_t index = 0;
};

class ManifestCache {
 public:
  std::optional<Listing> listing(const std::string& file) {
    const fs::path dir = fs::path(file).parent_path().empty() ? fs::path(".") : fs::path(file).parent_path();
    const std::string path = (dir / specs::kManifestName).string();
    auto it = manifests_.find(path);
    if (it == manifests_.end()) {
      std::error_code ec;
      std::optional<specs::Manifest> m;
      if (fs::exists(path, ec)) m = specs::read_manifest(dir.string());
      it = manifests_.emplace(path, std::move(m)).first;
    }
    if (!it->second) return std::nullopt;
    const auto& files = it->second->files;
    const std::string name = fs::path(file).filename().string();
    for (std::size_t i = 0; i < files.size(); ++i)
      if (files[i].name == name) return Listing{path, i};
    return std::nullopt;
  }
  const specs::Manifest& at(const std::string& path) const { return *manifests_.at(path); }

 private:
  std::map<std::string, std::optional<specs::Manifest>> manifests_;
};

// Files beside a manifest: all of them its files, all of its files, in its order.
void check_listed(const std::vector<std::string>& files, const std::vector<std::optional<Listing>>& listings,
                  const specs::Manifest& manifest, const std::string& manifest_path) {
  std::size_t first = 0;
  while (!listings[first]) ++first;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!listings[i])
      throw Error(fmt::format("{}: not listed in {}, while {} is: these are files of different splits", files[i],
                              manifest_path, files[first]));
    if (listings[i]->manifest_path != manifest_path)
      throw Error(fmt::format("{}: belongs to {}, while {} belongs to {}: these are files of different splits",
                              files[i], listings[i]->manifest_path, files[first], manifest_path));
  }
  const std::string what_to_do = fmt::format(
      "give the directory (merge {}) or all {} files in its order", fs::path(manifest_path).parent_path().string(),
      manifest.files.size());
  for (std::size_t i = 0; i < files.size(); ++i)
    if (listings[i]->index != i)
      throw Error(fmt::format("{}: is microbatch file {} of {}, given as input {}; {}", files[i], listings[i]->index,
                              manifest_path, i, what_to_do));
  if (files.size() != manifest.files.size())
    throw Error(fmt::format("{}: lists {} files, {} given; {}", manifest_path, manifest.files.size(), files.size(),
                            what_to_do));
}

}  // namespace

MergeSources find_sources(const std::vector<std::string>& arguments) {
  std::error_code ec;
  const bool from_directory = arguments.size() == 1 && fs::is_directory(arguments[0], ec);
  for (const auto& in : arguments)
    if (!from_directory && fs::is_directory(in, ec))
      throw usage_error("merge: give one directory (with manifest.json) or microbatch files, not both: " + in);
  MergeSources out;
  if (from_directory) {
    out.manifest = specs::read_manifest(arguments[0]);
    out.manifest_path = (fs::path(arguments[0]) / specs::kManifestName).string();
    for (const auto& f : out.manifest->files) out.paths.push_back((fs::path(arguments[0]) / f.name).string());
    return out;
  }
  out.paths = arguments;
  ManifestCache cache;
  std::vector<std::optional<Listing>> listings;
  for (const auto& file : arguments) listings.push_back(cache.listing(file));
  std::optional<std::string> first_listed;
  for (const auto& l : listings)
    if (l && !first_listed) first_listed = l->manifest_path;
  if (!first_listed) return out;  // plain files: no manifest knows them
  out.manifest = cache.at(*first_listed);
  out.manifest_path = *first_listed;
  check_listed(arguments, listings, *out.manifest, out.manifest_path);
  return out;
}

}  // namespace mb::io
